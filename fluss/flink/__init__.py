"""PyFlink integration: where the connector jar is and how a Flink environment gets it.

The Flink side of this project is a Java jar built from ``connector/`` (``make setup`` builds it): a Flink SQL
catalog (``'type'='fluss'``), a table factory (``'connector'='fluss'``), a FLIP-27 source and a Sink V2 sink
that talk to the Fluss servers over the same gRPC API as the Python client. PyFlink loads connectors from
``pipeline.jars``; :func:`add_connector_jars` appends the jar there, and every jar of the connector's ``lib/``
directory beside it (the Maven build copies Paimon's ``paimon-bundle`` there: the connector reads the lake half
of a Union Read with Paimon's Java reader), keeping jars already set, for a ``TableEnvironment`` or
``StreamExecutionEnvironment``::

    from pyflink.table import EnvironmentSettings, TableEnvironment
    from fluss.flink import add_connector_jars

    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    add_connector_jars(t_env)
    t_env.execute_sql("CREATE CATALOG fluss WITH ('type'='fluss', 'bootstrap.servers'='127.0.0.1:9123')")

``fluss.flink.sql`` runs Flink SQL scripts and interactive statements (the ``fluss sql`` command) and
``fluss.flink.datastream`` has the DataStream ``FlussSource`` / ``FlussSink`` builders.
``sql-client.sh`` from the wheel takes it with ``-j $(python -c 'import fluss.flink as f; print(f.connector_jar())')``
(and ``-j`` for each of :func:`connector_lib_jars` to read lake tables).
See ``docs/flink-connector.md``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fluss.errors import ErrorCode, FlussError

#: Flink option holding the jars shipped with a job (``;``-separated URLs).
PIPELINE_JARS = "pipeline.jars"
#: Environment variable that overrides where the connector jar is looked up.
CONNECTOR_JAR_ENV = "FLUSS_CONNECTOR_JAR"
#: Directory beside the connector jar whose jars are shipped with it (not shaded into it).
LIB_DIR = "lib"
#: Jars of the lib directory that Flink already has (logging APIs, for ``java -cp lib/*`` outside Flink only).
_FLINK_PROVIDED = ("slf4j-", "log4j-", "reload4j-")

_REPO_ROOT = Path(__file__).resolve().parents[2]
_DEFAULT_JAR = _REPO_ROOT / "connector" / "target" / "fluss-connector.jar"


def connector_jar() -> str:
    """Absolute path of the Flink connector jar.

    Raises:
        FlussError: the jar has not been built (run ``make setup``).
    """
    path = Path(os.environ.get(CONNECTOR_JAR_ENV) or _DEFAULT_JAR).resolve()
    if not path.is_file():
        raise FlussError(
            f"Flink connector jar not found at {path}: run `make setup` (it builds connector/ with Maven)"
            f" or set {CONNECTOR_JAR_ENV}",
            ErrorCode.CLIENT_ERROR,
        )
    return str(path)


def connector_jar_url() -> str:
    """The jar as a ``file://`` URL, the form ``pipeline.jars`` wants."""
    return Path(connector_jar()).as_uri()


def connector_lib_jars(jar: str | None = None) -> list[str]:
    """The jars that run beside the connector jar (``jar``, default :func:`connector_jar`): the ``*.jar`` files of
    the ``lib/`` directory next to it (``connector/target/lib/``: Paimon's ``paimon-bundle`` and the Hadoop classes
    it needs, copied there by the Maven build), sorted by name; the logging APIs there are left out (Flink has its
    own)."""
    lib = Path(jar or connector_jar()).parent / LIB_DIR
    if not lib.is_dir():
        return []
    return sorted(str(p.resolve()) for p in lib.glob("*.jar") if not p.name.startswith(_FLINK_PROVIDED))


def connector_jar_urls() -> list[str]:
    """The connector jar, then its lib jars, as ``file://`` URLs."""
    return [connector_jar_url()] + [Path(p).as_uri() for p in connector_lib_jars()]


def add_connector_jars(env: Any) -> list[str]:
    """Append the connector jar and its lib jars (:func:`connector_lib_jars`) to ``pipeline.jars`` of a PyFlink
    ``TableEnvironment`` or ``StreamExecutionEnvironment`` (jars already listed are kept; adding twice is a no-op).
    Jars already on the PyFlink JVM's class path (Flink's ``lib/`` way of installing a connector) are not shipped
    again: a second copy in the job's class loader would load every class twice.

    Returns:
        the jar URLs of ``pipeline.jars`` afterwards.
    """
    on_class_path = jvm_class_path()
    urls = [u for u in connector_jar_urls() if _url_path(u) not in on_class_path]
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import TableEnvironment

    if isinstance(env, TableEnvironment):
        config = env.get_config()
        jars = Configuration.parse_list_value(config.get(PIPELINE_JARS, "") or "")
        missing = [u for u in urls if u not in jars]
        if missing:
            jars.extend(missing)
            # TableConfig.set also adds the jars to the Python gateway's context class loader
            config.set(PIPELINE_JARS, ";".join(jars))
        return jars
    if isinstance(env, StreamExecutionEnvironment):
        jars = _stream_env_jars(env)
        missing = [u for u in urls if u not in jars]
        if missing:
            env.add_jars(*missing)
        return _stream_env_jars(env)
    raise TypeError(f"expected a PyFlink TableEnvironment or StreamExecutionEnvironment, got {type(env).__name__}")


def jvm_class_path() -> set[str]:
    """The resolved paths of the PyFlink JVM's class path entries (started if needed)."""
    from pyflink.java_gateway import get_gateway

    entries = get_gateway().jvm.System.getProperty("java.class.path") or ""
    return {str(Path(e).resolve()) for e in entries.split(os.pathsep) if e}


def _url_path(url: str) -> str:
    from urllib.parse import unquote, urlparse

    return str(Path(unquote(urlparse(url).path)).resolve())


def _stream_env_jars(env: Any) -> list[str]:
    from pyflink.common import Configuration
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    key = jvm.org.apache.flink.configuration.PipelineOptions.JARS.key()
    conf = jvm.org.apache.flink.python.util.PythonConfigUtil.getEnvironmentConfig(env._j_stream_execution_environment)
    return list(Configuration.parse_list_value(conf.getString(key, None)))
