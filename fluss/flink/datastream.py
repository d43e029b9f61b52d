"""PyFlink DataStream connectors for Fluss tables, in the style of PyFlink's Kafka wrappers.

Thin Python over Java builders in the connector jar (``org.fluss.py.flink.datastream``); the stream elements
are ``pyflink.common.Row`` values with the table's columns (a primary-key table's rows carry a RowKind:
INSERT/UPDATE_BEFORE/UPDATE_AFTER/DELETE). The table's schema is read from the cluster when ``build()`` runs,
so the environment must have the connector jar first (:func:`fluss.flink.add_connector_jars`)::

    env = StreamExecutionEnvironment.get_execution_environment()
    add_connector_jars(env)
    source = (FlussSource.builder().set_bootstrap_servers("127.0.0.1:9123").set_database("fluss")
              .set_table("orders").set_starting_offsets(FlussStartingOffsets.earliest())
              .set_projected_fields(["id", "amount"]).build())
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "orders")
    sink = FlussSink.builder().set_bootstrap_servers("127.0.0.1:9123").set_table("orders_copy").build()
    stream.sink_to(sink)

Starting offsets are ``scan.startup.mode``: ``full`` (default: a primary-key table's snapshot, then its
changelog; a log table from the beginning), ``earliest``, ``latest`` or a timestamp.
"""

from __future__ import annotations

from pyflink.datastream.connectors.base import Sink, Source
from pyflink.java_gateway import get_gateway

_PACKAGE = "org.fluss.py.flink.datastream"


def _new(name: str):
    # PyFlink resolves classes through the context class loader, which has the connector jar once
    # add_connector_jars ran (or pipeline.jars was set)
    target = get_gateway().jvm
    for part in f"{_PACKAGE}.{name}".split("."):
        target = getattr(target, part)
    return target()


class FlussStartingOffsets:
    """Where a :class:`FlussSource` starts (``scan.startup.mode``)."""

    def __init__(self, mode: str, timestamp_ms: int | None = None) -> None:
        self.mode = mode
        self.timestamp_ms = timestamp_ms

    @staticmethod
    def full() -> FlussStartingOffsets:
        return FlussStartingOffsets("full")

    @staticmethod
    def earliest() -> FlussStartingOffsets:
        return FlussStartingOffsets("earliest")

    @staticmethod
    def latest() -> FlussStartingOffsets:
        return FlussStartingOffsets("latest")

    @staticmethod
    def timestamp(epoch_ms: int) -> FlussStartingOffsets:
        return FlussStartingOffsets("timestamp", int(epoch_ms))

    def __repr__(self) -> str:
        return f"FlussStartingOffsets({self.mode}{'' if self.timestamp_ms is None else f', {self.timestamp_ms}'})"


class FlussSource(Source):
    """A FLIP-27 source of a Fluss table's rows; create it with :meth:`builder`."""

    def __init__(self, j_source) -> None:
        super().__init__(j_source)

    @staticmethod
    def builder() -> FlussSourceBuilder:
        return FlussSourceBuilder()


class FlussSourceBuilder:
    def __init__(self) -> None:
        self._j_builder = _new("FlussSourceBuilder")

    def set_bootstrap_servers(self, servers: str) -> FlussSourceBuilder:
        self._j_builder.setBootstrapServers(servers)
        return self

    def set_database(self, database: str) -> FlussSourceBuilder:
        self._j_builder.setDatabase(database)
        return self

    def set_table(self, table: str) -> FlussSourceBuilder:
        self._j_builder.setTable(table)
        return self

    def set_starting_offsets(self, offsets: FlussStartingOffsets) -> FlussSourceBuilder:
        if offsets.mode == "timestamp":
            self._j_builder.setStartingTimestamp(offsets.timestamp_ms)
        else:
            self._j_builder.setStartingOffsets(offsets.mode)
        return self

    def set_projected_fields(self, fields: list[str]) -> FlussSourceBuilder:
        gateway = get_gateway()
        array = gateway.new_array(gateway.jvm.java.lang.String, len(fields))
        for i, f in enumerate(fields):
            array[i] = f
        self._j_builder.setProjectedFields(array)
        return self

    def set_bounded(self, bounded: bool = True) -> FlussSourceBuilder:
        """Stop at the offsets of the start (a primary-key table: read its current rows) instead of running on."""
        self._j_builder.setBounded(bounded)
        return self

    def build(self) -> FlussSource:
        return FlussSource(self._j_builder.build())


class FlussSink(Sink):
    """A Sink V2 into a Fluss table (append to a log table, upsert/delete into a primary-key table)."""

    def __init__(self, j_sink) -> None:
        super().__init__(j_sink)

    @staticmethod
    def builder() -> FlussSinkBuilder:
        return FlussSinkBuilder()


class FlussSinkBuilder:
    def __init__(self) -> None:
        self._j_builder = _new("FlussSinkBuilder")

    def set_bootstrap_servers(self, servers: str) -> FlussSinkBuilder:
        self._j_builder.setBootstrapServers(servers)
        return self

    def set_database(self, database: str) -> FlussSinkBuilder:
        self._j_builder.setDatabase(database)
        return self

    def set_table(self, table: str) -> FlussSinkBuilder:
        self._j_builder.setTable(table)
        return self

    def set_ignore_delete(self, ignore: bool = True) -> FlussSinkBuilder:
        """Drop DELETE rows instead of deleting (``sink.ignore-delete``)."""
        self._j_builder.setIgnoreDelete(ignore)
        return self

    def build(self) -> FlussSink:
        return FlussSink(self._j_builder.build())
