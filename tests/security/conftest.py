"""Connections to the session's secured cluster (``secured_cluster`` in ``tests/conftest.py``) as a user, or
anonymously on its plaintext listener."""

from __future__ import annotations

import pytest
import pytest_asyncio

import fluss
from fluss.server.cluster import LocalCluster


async def connect(cluster: LocalCluster, user: str | None, password: str | None = None) -> fluss.FlussConnection:
    """A connection as ``user`` on the SASL listener (None: anonymous, on the plaintext listener)."""
    if user is None:
        return await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
    return await fluss.FlussConnection.create(fluss.Config(cluster.sasl_config(user, password)))


@pytest.fixture
def connect_as(secured_cluster):
    """``await connect_as("alice")``; the test closes what it opens."""
    return lambda user, password=None: connect(secured_cluster, user, password)


@pytest_asyncio.fixture(loop_scope="session")
async def as_admin(secured_cluster):
    c = await connect(secured_cluster, "admin")
    yield c
    await c.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def as_alice(secured_cluster):
    c = await connect(secured_cluster, "alice")
    yield c
    await c.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def as_anonymous(secured_cluster):
    c = await connect(secured_cluster, None)
    yield c
    await c.aclose()
