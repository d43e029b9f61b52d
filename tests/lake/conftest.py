"""A cluster with a Paimon lake (own warehouse), shared by the lake tests of this directory.

Small log segments and a fast retention check let the TTL test expire tiered data within seconds.
"""

from __future__ import annotations

import uuid

import pytest
import pytest_asyncio

import fluss
from fluss.server.cluster import LocalCluster


@pytest.fixture(scope="package")
def warehouse(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("paimon-warehouse"))


@pytest.fixture(scope="package")
def lake_cluster(warehouse):
    config = {
        "datalake.format": "paimon",
        "datalake.paimon.warehouse": warehouse,
        "log.segment.file-size": "8kb",
        "log.retention.check-interval": "500ms",
    }
    with LocalCluster(tablet_servers=1, server_config=config) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session", scope="package")
async def lake_conn(lake_cluster):
    connection = await fluss.FlussConnection.create(
        fluss.Config({"bootstrap.servers": lake_cluster.bootstrap_servers}))
    yield connection
    await connection.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def lake_db(lake_conn):
    name = f"lake_{uuid.uuid4().hex[:8]}"
    admin = lake_conn.get_admin()
    await admin.create_database(name)
    yield name
    await admin.drop_database(name, ignore_if_not_exists=True, cascade=True)
