"""Shared fixtures: one real cluster (ZooKeeper + coordinator + 3 tablet servers as processes) for the
whole session, and a client connection per test. Fault tests that kill processes use their own cluster. A real
S3 API on loopback (moto's server in its own virtualenv, ``fluss/fs/local_s3.py``), started the first time a test
asks for it and shared by the rest of the session: each user makes a bucket of its own (``s3_bucket``)."""

from __future__ import annotations

import os
import uuid

import pytest
import pytest_asyncio

import fluss
from fluss.fs.local_s3 import LocalS3Server
from fluss.server.cluster import LocalCluster
from fluss.server.zk.client import ZooKeeperClient
from fluss.server.zk.data import DatabaseRegistration
from fluss.server.zk.local_server import LocalZooKeeper

SHARED_SERVER_CONFIG = {
    "log.retention.check-interval": "1s",
    "max.bucket.num": "64",
    "metrics.reporters": "prometheus",  # each server on a free port of its own (the dashboard tests read them)
    "auto-partition.check.interval": "1s",  # auto-partitioned tables' expired partitions go within seconds
}


@pytest.fixture(scope="session")
def cluster():
    with LocalCluster(tablet_servers=3, server_config=SHARED_SERVER_CONFIG) as c:
        yield c


#: Users of the secured cluster's SASL listener (``admin`` is a super user).
SECURED_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="session")
def secured_cluster():
    """A small secured cluster, started when a test first asks for it: a coordinator and two tablet servers, each
    with a plaintext, a SASL-over-TLS and an internal SASL-over-TLS listener; ACLs on, ``admin`` a super user."""
    with LocalCluster(tablet_servers=2, sasl_users=SECURED_USERS, super_users=["admin"], tls=True,
                      server_config={"default.replication.factor": "2"}) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def conn(cluster):
    connection = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
    yield connection
    await connection.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def admin(conn):
    return conn.get_admin()


@pytest_asyncio.fixture(loop_scope="session")
async def database(admin):
    """A fresh database per test, dropped with its tables afterwards."""
    name = f"db_{uuid.uuid4().hex[:8]}"
    await admin.create_database(name)
    yield name
    await admin.drop_database(name, ignore_if_not_exists=True, cascade=True)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    with LocalS3Server(log_path=log_path, owner_pid=os.getpid()) as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server) -> str:
    name = f"fluss-{uuid.uuid4().hex[:10]}"
    s3_server.create_bucket(name)
    return name


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    """A ZooKeeper of its own for a module whose tests talk to it directly (no cluster)."""
    server = LocalZooKeeper(tmp_path_factory.mktemp("zk"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def zk(zookeeper):
    """A ``ZooKeeperClient`` of ``zookeeper`` under a fresh root, holding database ``db``."""
    client = ZooKeeperClient(zookeeper.address, root=f"/test-{uuid.uuid4().hex[:8]}")
    client.start()
    client.create_database("db", DatabaseRegistration(None, {}, 0, 0))
    yield client
    client.close()
