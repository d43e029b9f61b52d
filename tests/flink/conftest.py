"""Fixtures of the Flink connector tests: one PyFlink JVM for the whole session (a batch and a streaming
TableEnvironment on it, both with the connector jar and a catalog ``fluss_catalog`` on the session's shared
cluster), and a fresh Fluss database per test."""

from __future__ import annotations

import uuid

import pytest
import pytest_asyncio

from fluss.flink import add_connector_jars, connector_jar

CATALOG = "fluss_catalog"


def _table_env(cluster, streaming: bool):
    from pyflink.table import EnvironmentSettings, TableEnvironment

    settings = EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    t_env = TableEnvironment.create(settings)
    config = t_env.get_config()
    config.set("parallelism.default", "2")
    config.set("table.exec.resource.default-parallelism", "2")
    config.set("rest.bind-port", "0")  # no fixed port for the local mini-cluster's web endpoint
    if streaming:
        config.set("execution.checkpointing.interval", "1s")
    add_connector_jars(t_env)
    t_env.execute_sql(
        f"CREATE CATALOG {CATALOG} WITH ('type'='fluss', 'bootstrap.servers'='{cluster.bootstrap_servers}')"
    ).wait()
    return t_env


@pytest.fixture(scope="session")
def connector():
    return connector_jar()  # fails with "run make setup" when the jar is missing


@pytest.fixture(scope="session")
def batch_env(cluster, connector):
    return _table_env(cluster, streaming=False)


@pytest.fixture(scope="session")
def stream_env(cluster, connector):
    return _table_env(cluster, streaming=True)


@pytest_asyncio.fixture(loop_scope="session")
async def flink_db(admin):
    """A fresh Fluss database for one test, dropped with its tables afterwards."""
    name = f"flink_{uuid.uuid4().hex[:8]}"
    await admin.create_database(name)
    yield name
    await admin.drop_database(name, ignore_if_not_exists=True, cascade=True)
