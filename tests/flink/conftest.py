"""Fixtures of the Flink connector tests: one PyFlink JVM for the whole session (a batch and a streaming
TableEnvironment on it, both with the connector jar and a catalog ``fluss_catalog`` on the session's shared
cluster), and a fresh Fluss database per test.

The session's JVM has the connector jar and its lib jars on its class path (Flink's ``lib/`` way), and the two
shared environments submit their jobs to one Flink mini-cluster started in that JVM for the session (Flink's
session-cluster way). Each job of a local environment would start a mini-cluster of its own and load the
connector's classes into a new class loader: 2-5 s per query, most of a Flink test's time."""

from __future__ import annotations

import os
import threading
import uuid

import pytest
import pytest_asyncio

from fluss.flink import add_connector_jars, connector_jar, connector_lib_jars
from fluss.flink.gateway import pin_gateway_to_current_thread

CATALOG = "fluss_catalog"
#: Slots of the session's mini-cluster: room for the jobs a test leaves running next to the next test's jobs.
FLINK_SESSION_SLOTS = 32
FLINK_SESSION_CONFIG = {
    "rest.bind-address": "127.0.0.1",
    "rest.bind-port": "0",
    "taskmanager.memory.managed.size": "1g",  # 32 MiB per slot for batch sorts and hash aggregations
    "taskmanager.memory.network.min": "256m",
    "taskmanager.memory.network.max": "256m",
}


def _table_env(cluster, flink_session_port: int, streaming: bool):
    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment

    conf = Configuration()
    conf.set_string("execution.target", "remote")
    conf.set_string("rest.address", "127.0.0.1")
    conf.set_string("rest.port", str(flink_session_port))
    settings = EnvironmentSettings.new_instance().with_configuration(conf)
    settings = settings.in_streaming_mode() if streaming else settings.in_batch_mode()
    t_env = TableEnvironment.create(settings.build())
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
def jvm_stderr(tmp_path_factory):
    """PyFlink starts its JVM with ``stderr=PIPE`` and never reads the pipe: once 64 KiB of JVM warnings pile up
    there, every JVM thread that writes to stderr blocks (and the session with it). This drains it into a file
    (the path is the fixture's value) for the JVM started afterwards."""
    import pyflink.java_gateway as java_gateway

    original = java_gateway.launch_gateway_server_process
    path = tmp_path_factory.getbasetemp() / "pyflink-gateway-stderr.log"

    def launch(env, args):
        jars = os.pathsep.join([connector_jar(), *connector_lib_jars()])
        env["HADOOP_CLASSPATH"] = os.pathsep.join(filter(None, [jars, env.get("HADOOP_CLASSPATH")]))
        process = original(env, args)

        def drain() -> None:
            with open(path, "ab") as out:
                for chunk in iter(lambda: process.stderr.read1(65536), b""):
                    out.write(chunk)
                    out.flush()

        threading.Thread(target=drain, name="pyflink-gateway-stderr", daemon=True).start()
        return process

    java_gateway.launch_gateway_server_process = launch
    yield path
    java_gateway.launch_gateway_server_process = original


@pytest.fixture(scope="session")
def connector(jvm_stderr):
    """The connector jar, with the session's PyFlink JVM started and pinned to the test thread: the planner of
    every TableEnvironment works only on the JVM thread that created it, and watchdog timers, worker threads
    and py4j finalisers open other connections (see fluss.flink.gateway)."""
    jar = connector_jar()  # fails with "run make setup" when the jar is missing
    pin_gateway_to_current_thread()
    return jar


@pytest.fixture(scope="session")
def flink_session_port(connector):
    """The REST port of a Flink mini-cluster in the session's JVM that the shared environments submit to."""
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    conf = jvm.org.apache.flink.configuration.Configuration()
    for key, value in FLINK_SESSION_CONFIG.items():
        conf.setString(key, value)
    minicluster = jvm.org.apache.flink.runtime.minicluster
    mini = minicluster.MiniCluster(minicluster.MiniClusterConfiguration.Builder().setConfiguration(conf)
                                   .setNumTaskManagers(1).setNumSlotsPerTaskManager(FLINK_SESSION_SLOTS).build())
    mini.start()
    yield mini.getRestAddress().get().getPort()
    mini.close()


@pytest.fixture(scope="session")
def batch_env(cluster, flink_session_port):
    return _table_env(cluster, flink_session_port, streaming=False)


@pytest.fixture(scope="session")
def stream_env(cluster, flink_session_port):
    return _table_env(cluster, flink_session_port, streaming=True)


@pytest_asyncio.fixture(loop_scope="session")
async def flink_db(admin):
    """A fresh Fluss database for one test, dropped with its tables afterwards."""
    name = f"flink_{uuid.uuid4().hex[:8]}"
    await admin.create_database(name)
    yield name
    await admin.drop_database(name, ignore_if_not_exists=True, cascade=True)


@pytest.fixture(scope="session")
def new_stream_env(connector):
    """A factory of fresh streaming TableEnvironments in the session's JVM, for tests whose jobs need their own
    Flink configuration (a checkpoint directory, a restore path, a restart strategy):
    ``new_stream_env(bootstrap_servers, catalog, config)`` has the connector jar and a Fluss catalog named
    ``catalog`` on ``bootstrap_servers``; ``config`` is applied when the environment is created."""
    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment

    def make(bootstrap_servers: str, catalog: str = CATALOG, config: dict[str, str] | None = None):
        conf = Configuration()
        settings = {"parallelism.default": "2", "table.exec.resource.default-parallelism": "2",
                    "rest.bind-port": "0", **(config or {})}
        for key, value in settings.items():
            conf.set_string(key, value)
        t_env = TableEnvironment.create(
            EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(conf).build())
        add_connector_jars(t_env)
        t_env.execute_sql(
            f"CREATE CATALOG {catalog} WITH ('type'='fluss', 'bootstrap.servers'='{bootstrap_servers}')").wait()
        return t_env

    return make


# ---------------------------------------------------------------- a cluster with a Paimon lake (Union Read tests)

LAKE_CATALOG = "fluss_lake"


@pytest.fixture(scope="module")
def flink_lake_cluster(tmp_path_factory):
    """A cluster with a Paimon warehouse of its own (small log segments and a fast retention check, so records
    expired by TTL leave the log within seconds), for one test module."""
    from fluss.server.cluster import LocalCluster

    warehouse = tmp_path_factory.mktemp("flink-paimon-warehouse")
    config = {"datalake.format": "paimon", "datalake.paimon.warehouse": str(warehouse),
              "log.segment.file-size": "8kb", "log.retention.check-interval": "500ms"}
    with LocalCluster(tablet_servers=1, server_config=config) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def flink_lake_conn(flink_lake_cluster):
    import fluss

    connection = await fluss.FlussConnection.create(
        fluss.Config({"bootstrap.servers": flink_lake_cluster.bootstrap_servers}))
    yield connection
    await connection.aclose()


@pytest.fixture(scope="module")
def lake_catalog(flink_lake_cluster, batch_env, stream_env):
    """A Fluss catalog ``fluss_lake`` on the lake cluster in the session's batch and streaming environments."""
    for env in (batch_env, stream_env):
        env.execute_sql(f"DROP CATALOG IF EXISTS {LAKE_CATALOG}").wait()
        env.execute_sql(f"CREATE CATALOG {LAKE_CATALOG} WITH ('type'='fluss', "
                        f"'bootstrap.servers'='{flink_lake_cluster.bootstrap_servers}')").wait()
    yield LAKE_CATALOG
    for env in (batch_env, stream_env):
        env.execute_sql(f"DROP CATALOG IF EXISTS {LAKE_CATALOG}").wait()


@pytest_asyncio.fixture(loop_scope="session")
async def flink_lake_db(flink_lake_conn):
    """A fresh database on the lake cluster for one test."""
    name = f"flake_{uuid.uuid4().hex[:8]}"
    admin = flink_lake_conn.get_admin()
    await admin.create_database(name)
    yield name
    await admin.drop_database(name, ignore_if_not_exists=True, cascade=True)
