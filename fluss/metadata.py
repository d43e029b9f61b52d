"""Table and cluster metadata objects, shared by the client API and the servers.

These are the classes of the official Fluss Python client (``TablePath``, ``Schema``, ``TableDescriptor``,
``TableInfo``, ``DatabaseDescriptor``, ``DatabaseInfo``, ``PartitionInfo``, ``ServerNode``, ``TableBucket``,
``OffsetSpec``) plus their conversion to and from the RPC messages. Column types travel as canonical type
strings (``fluss.types``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.types import Column, RowSchema, display_type_text, from_arrow, parse_type

EARLIEST_OFFSET = -2
LATEST_OFFSET = -1
NO_PARTITION = -1


class TablePath:
    """``database.table``."""

    __slots__ = ("_database", "_table")

    def __init__(self, database_name: str, table_name: str) -> None:
        self._database = database_name
        self._table = table_name

    @property
    def database_name(self) -> str:
        return self._database

    @property
    def table_name(self) -> str:
        return self._table

    def table_path_str(self) -> str:
        return f"{self._database}.{self._table}"

    def to_pb(self) -> pb.TablePathPb:
        return pb.TablePathPb(database_name=self._database, table_name=self._table)

    @classmethod
    def from_pb(cls, msg: pb.TablePathPb) -> TablePath:
        return cls(msg.database_name, msg.table_name)

    def __str__(self) -> str:
        return self.table_path_str()

    def __repr__(self) -> str:
        return f"TablePath({self._database!r}, {self._table!r})"

    def __hash__(self) -> int:
        return hash((self._database, self._table))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TablePath) and (self._database, self._table) == (other._database, other._table)


class Schema:
    """A table schema: an Arrow schema plus the primary key columns."""

    def __init__(self, schema: pa.Schema, primary_keys: list[str] | None = None) -> None:
        self._row_schema = RowSchema.from_arrow(schema, list(primary_keys or []))

    @classmethod
    def of(cls, row_schema: RowSchema) -> Schema:
        obj = cls.__new__(cls)
        obj._row_schema = row_schema
        return obj

    @property
    def row_schema(self) -> RowSchema:
        return self._row_schema

    def get_column_names(self) -> list[str]:
        return [c.name for c in self._row_schema.columns]

    def get_column_types(self) -> list[str]:
        """The column types as the official client shows them (``int NOT NULL``, ``array<string>``, ...)."""
        return [display_type_text(c.data_type) for c in self._row_schema.columns]

    def get_columns(self) -> list[tuple[str, str]]:
        return list(zip(self.get_column_names(), self.get_column_types(), strict=True))

    def get_primary_keys(self) -> list[str]:
        return list(self._row_schema.primary_keys)

    def to_arrow(self) -> pa.Schema:
        return self._row_schema.to_arrow()

    def to_pb(self) -> pb.SchemaPb:
        return pb.SchemaPb(
            columns=[
                pb.ColumnPb(name=c.name, data_type=str(c.data_type), comment=c.comment or "",
                            has_comment=c.comment is not None)
                for c in self._row_schema.columns
            ],
            primary_keys=self._row_schema.primary_keys,
        )

    @classmethod
    def from_pb(cls, msg: pb.SchemaPb) -> Schema:
        columns = [Column(c.name, parse_type(c.data_type), c.comment if c.has_comment else None) for c in msg.columns]
        return cls.of(RowSchema(columns, list(msg.primary_keys)))

    def __str__(self) -> str:
        """As the official client prints it: ``Schema: columns=[("id", "int NOT NULL"), ("name", "string")]``."""
        return "Schema: columns=[" + ", ".join(f'("{n}", "{t}")' for n, t in self.get_columns()) + "]"

    def __repr__(self) -> str:
        pk = f", primary_keys={self.get_primary_keys()}" if self.get_primary_keys() else ""
        return f"Schema({', '.join(f'{n} {t}' for n, t in self.get_columns())}{pk})"


class TableDescriptor:
    """What a user asks for when creating a table."""

    def __init__(
        self,
        schema: Schema,
        *,
        partition_keys: list[str] | None = None,
        bucket_count: int | None = None,
        bucket_keys: list[str] | None = None,
        comment: str | None = None,
        log_format: str | None = None,
        kv_format: str | None = None,
        properties: dict[str, str] | None = None,
        custom_properties: dict[str, str] | None = None,
    ) -> None:
        if bucket_count is not None and bucket_count < 1:
            raise FlussError(f"Bucket count must be at least 1, got {bucket_count}", ErrorCode.INVALID_TABLE_EXCEPTION)
        self._schema = schema
        self.partition_keys = list(partition_keys or [])
        self.bucket_count = bucket_count
        self.bucket_keys = list(bucket_keys or [])
        self.comment = comment
        self.properties = {k: str(v) for k, v in (properties or {}).items()}
        if log_format:
            self.properties["table.log.format"] = log_format
        if kv_format:
            self.properties["table.kv.format"] = kv_format
        self.custom_properties = {k: str(v) for k, v in (custom_properties or {}).items()}

    def get_schema(self) -> Schema:
        return self._schema

    def to_pb(self) -> pb.TableDescriptorPb:
        return pb.TableDescriptorPb(
            schema=self._schema.to_pb(),
            partition_keys=self.partition_keys,
            bucket_count=self.bucket_count or 0,
            bucket_keys=self.bucket_keys,
            comment=self.comment or "",
            has_comment=self.comment is not None,
            properties=self.properties,
            custom_properties=self.custom_properties,
        )

    @classmethod
    def from_pb(cls, msg: pb.TableDescriptorPb) -> TableDescriptor:
        desc = cls(
            Schema.from_pb(msg.schema),
            partition_keys=list(msg.partition_keys),
            bucket_count=None,
            bucket_keys=list(msg.bucket_keys),
            comment=msg.comment if msg.has_comment else None,
            properties=dict(msg.properties),
            custom_properties=dict(msg.custom_properties),
        )
        desc.bucket_count = msg.bucket_count or None  # unchecked: the coordinator validates what it receives
        return desc

    def __repr__(self) -> str:
        return (f"TableDescriptor({self._schema}, partition_keys={self.partition_keys}, "
                f"bucket_count={self.bucket_count}, bucket_keys={self.bucket_keys})")


class TableChange:
    """One change of ``FlussAdmin.alter_table`` (Fluss's ``TableChange``): ``TableChange.set(key, value)`` sets a
    table option (or a custom property), ``TableChange.reset(key)`` removes it so its default applies again,
    ``TableChange.add_column(name, data_type, comment)`` appends a nullable column (a new schema id)."""

    __slots__ = ("_kind", "_key", "_value", "_column")

    SET = "set"
    RESET = "reset"
    ADD_COLUMN = "add_column"
    #: where ``add_column`` puts the column; Fluss's ``ColumnPosition.last()``, the only one supported
    LAST = "LAST"

    def __init__(self, kind: str, key: str, value: str | None = None, column: Column | None = None,
                 position: str = LAST) -> None:
        if kind not in (self.SET, self.RESET, self.ADD_COLUMN):
            raise ValueError(f"unknown table change kind {kind!r}")
        self._kind, self._key, self._value = kind, key, value
        self._column = (column, position) if kind == self.ADD_COLUMN else None

    @staticmethod
    def set(key: str, value: str) -> TableChange:
        return TableChange(TableChange.SET, key, str(value))

    @staticmethod
    def reset(key: str) -> TableChange:
        return TableChange(TableChange.RESET, key)

    @staticmethod
    def add_column(name: str, data_type: pa.DataType | str, comment: str | None = None,
                   position: str = LAST) -> TableChange:
        """``ALTER TABLE ... ADD (name type [COMMENT comment])`` (Fluss's ``TableChange.addColumn``): a new column
        after the last one. ``data_type`` is an Arrow type (as in ``Schema``) or a Fluss type string (``"INT"``,
        ``"DECIMAL(10, 2)"``). The column must be nullable; ``position`` other than ``"LAST"`` is refused by the
        coordinator, as Fluss does."""
        if isinstance(data_type, pa.DataType):
            dtype = from_arrow(data_type)
        elif isinstance(data_type, str):
            dtype = parse_type(data_type)
        else:
            raise FlussError(f"column '{name}': data type {data_type!r} is neither a pyarrow.DataType nor a type "
                             "string", ErrorCode.INVALID_ALTER_TABLE_EXCEPTION)
        return TableChange(TableChange.ADD_COLUMN, name, column=Column(name, dtype, comment),
                           position=str(position or TableChange.LAST).upper())

    kind = property(lambda self: self._kind)
    key = property(lambda self: self._key)
    value = property(lambda self: self._value)
    column = property(lambda self: self._column[0] if self._column else None)
    position = property(lambda self: self._column[1] if self._column else None)

    def to_pb(self) -> pb.TableChangePb:
        if self._kind == self.SET:
            return pb.TableChangePb(set_option=pb.SetOptionPb(key=self._key, value=self._value or ""))
        if self._kind == self.ADD_COLUMN:
            c, position = self._column
            return pb.TableChangePb(add_column=pb.AddColumnPb(
                name=c.name, data_type=str(c.data_type), comment=c.comment or "", has_comment=c.comment is not None,
                position=position))
        return pb.TableChangePb(reset_option=pb.ResetOptionPb(key=self._key))

    @classmethod
    def from_pb(cls, msg: pb.TableChangePb) -> TableChange:
        which = msg.WhichOneof("change")
        if which == "set_option":
            return cls(cls.SET, msg.set_option.key, msg.set_option.value)
        if which == "reset_option":
            return cls(cls.RESET, msg.reset_option.key)
        if which == "add_column":
            a = msg.add_column
            try:
                column = Column(a.name, parse_type(a.data_type), a.comment if a.has_comment else None)
            except FlussError as e:
                raise FlussError(f"ADD column '{a.name}': {e.message}",
                                 ErrorCode.INVALID_ALTER_TABLE_EXCEPTION) from None
            return cls(cls.ADD_COLUMN, a.name, column=column, position=(a.position or cls.LAST).upper())
        raise FlussError("A table change must set or reset an option or add a column",
                         ErrorCode.INVALID_ALTER_TABLE_EXCEPTION)

    def _identity(self) -> tuple:
        return (self._kind, self._key, self._value, self._column)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TableChange) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash((self._kind, self._key, self._value))

    def __repr__(self) -> str:
        if self._kind == self.SET:
            return f"TableChange.set({self._key!r}, {self._value!r})"
        if self._kind == self.ADD_COLUMN:
            c = self._column[0]
            comment = f", comment={c.comment!r}" if c.comment is not None else ""
            return f"TableChange.add_column({c.name!r}, {str(c.data_type)!r}{comment})"
        return f"TableChange.reset({self._key!r})"


class TableInfo:
    """A registered table: its id, schema id and resolved descriptor."""

    def __init__(self, table_path: TablePath, table_id: int, schema_id: int, descriptor: TableDescriptor,
                 created_time: int, modified_time: int, schema_column_counts: list[int] | None = None) -> None:
        self._table_path = table_path
        # the column count of every schema id (ALTER TABLE ADD); a table never altered has one schema id
        self._column_counts = list(schema_column_counts or [])
        self._table_id = table_id
        self._schema_id = schema_id
        self._descriptor = descriptor
        self._created_time = created_time
        self._modified_time = modified_time

    table_id = property(lambda self: self._table_id)
    schema_id = property(lambda self: self._schema_id)
    created_time = property(lambda self: self._created_time)
    modified_time = property(lambda self: self._modified_time)
    table_path = property(lambda self: self._table_path)

    @property
    def schema_column_counts(self) -> list[int]:
        """Entry ``i``: how many (leading) columns schema id ``i + 1`` has (``fluss.record.schema_evolution``)."""
        if self._column_counts:
            return list(self._column_counts)
        return [self.get_column_count()] * max(1, self._schema_id)

    @property
    def num_buckets(self) -> int:
        return int(self._descriptor.bucket_count or 1)

    @property
    def comment(self) -> str | None:
        return self._descriptor.comment

    @property
    def descriptor(self) -> TableDescriptor:
        return self._descriptor

    @property
    def row_schema(self) -> RowSchema:
        return self._descriptor.get_schema().row_schema

    def get_primary_keys(self) -> list[str]:
        return self._descriptor.get_schema().get_primary_keys()

    def get_bucket_keys(self) -> list[str]:
        return list(self._descriptor.bucket_keys)

    def get_partition_keys(self) -> list[str]:
        return list(self._descriptor.partition_keys)

    def has_primary_key(self) -> bool:
        return bool(self.get_primary_keys())

    def is_partitioned(self) -> bool:
        return bool(self._descriptor.partition_keys)

    def get_properties(self) -> dict[str, str]:
        return dict(self._descriptor.properties)

    def get_custom_properties(self) -> dict[str, str]:
        return dict(self._descriptor.custom_properties)

    def get_schema(self) -> Schema:
        return self._descriptor.get_schema()

    def get_column_names(self) -> list[str]:
        return self.get_schema().get_column_names()

    def get_column_count(self) -> int:
        return len(self.get_column_names())

    def to_pb(self) -> pb.TableInfoPb:
        return pb.TableInfoPb(table_path=self._table_path.to_pb(), table_id=self._table_id, schema_id=self._schema_id,
                              descriptor=self._descriptor.to_pb(), created_time=self._created_time,
                              modified_time=self._modified_time, schema_column_counts=self._column_counts)

    @classmethod
    def from_pb(cls, msg: pb.TableInfoPb) -> TableInfo:
        return cls(TablePath.from_pb(msg.table_path), msg.table_id, msg.schema_id,
                   TableDescriptor.from_pb(msg.descriptor), msg.created_time, msg.modified_time,
                   list(msg.schema_column_counts))

    def __repr__(self) -> str:
        return (f"TableInfo({self._table_path}, table_id={self._table_id}, schema_id={self._schema_id}, "
                f"buckets={self.num_buckets}, pk={self.get_primary_keys()}, partition_keys={self.get_partition_keys()})")


class DatabaseDescriptor:
    def __init__(self, comment: str | None = None, custom_properties: dict[str, str] | None = None) -> None:
        self._comment = comment
        self._custom_properties = dict(custom_properties or {})

    @property
    def comment(self) -> str | None:
        return self._comment

    def get_custom_properties(self) -> dict[str, str]:
        return dict(self._custom_properties)

    def to_pb(self) -> pb.DatabaseDescriptorPb:
        return pb.DatabaseDescriptorPb(comment=self._comment or "", has_comment=self._comment is not None,
                                       custom_properties=self._custom_properties)

    @classmethod
    def from_pb(cls, msg: pb.DatabaseDescriptorPb) -> DatabaseDescriptor:
        return cls(msg.comment if msg.has_comment else None, dict(msg.custom_properties))

    def __repr__(self) -> str:
        return f"DatabaseDescriptor(comment={self._comment!r}, custom_properties={self._custom_properties})"


class DatabaseInfo:
    def __init__(self, database_name: str, descriptor: DatabaseDescriptor, created_time: int, modified_time: int):
        self._name = database_name
        self._descriptor = descriptor
        self._created_time = created_time
        self._modified_time = modified_time

    database_name = property(lambda self: self._name)
    created_time = property(lambda self: self._created_time)
    modified_time = property(lambda self: self._modified_time)

    def get_database_descriptor(self) -> DatabaseDescriptor:
        return self._descriptor

    @classmethod
    def from_pb(cls, msg: pb.DatabaseInfoPb) -> DatabaseInfo:
        return cls(msg.database_name, DatabaseDescriptor.from_pb(msg.descriptor), msg.created_time, msg.modified_time)

    def __repr__(self) -> str:
        return f"DatabaseInfo({self._name!r}, {self._descriptor!r})"


class PartitionInfo:
    """A partition of a partitioned table: its id (unique in the cluster), name and spec, and (this client's
    addition) its own bucket count (``bucket_count``; None when the server did not say): the table's ``bucket.num``
    when the partition was created (ALTER TABLE SET bucket.num changes the count of later partitions only)."""

    __slots__ = ("_id", "_name", "_spec", "_bucket_count")

    def __init__(self, partition_id: int, partition_name: str, partition_spec: dict[str, str] | None = None,
                 bucket_count: int | None = None) -> None:
        self._id = partition_id
        self._name = partition_name
        self._spec = dict(partition_spec or {})
        self._bucket_count = bucket_count

    @property
    def partition_id(self) -> int:
        return self._id

    @property
    def partition_name(self) -> str:
        return self._name

    @property
    def partition_spec(self) -> dict[str, str]:
        return dict(self._spec)

    @property
    def bucket_count(self) -> int | None:
        return self._bucket_count

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionInfo) and (self._id, self._name) == (other._id, other._name)

    def __hash__(self) -> int:
        return hash((self._id, self._name))

    def __repr__(self) -> str:
        return f"PartitionInfo(partition_id={self._id}, partition_name={self._name!r})"

    @classmethod
    def from_pb(cls, msg: pb.PartitionInfoPb) -> PartitionInfo:
        return cls(msg.partition_id, msg.partition_name, dict(msg.partition_spec), msg.bucket_count or None)


@dataclass(frozen=True)
class TableStats:
    """Statistics of a table (``admin.get_table_stats``): its current number of rows."""

    row_count: int


class ServerNode:
    """A server of the cluster: ``CoordinatorServer`` or ``TabletServer``; ``metrics_port`` is its Prometheus
    endpoint on ``host`` (0: it exports no metrics; this client's addition); ``rack`` is a tablet server's
    ``tablet-server.rack`` (None: no rack), as Fluss's Java ``ServerNode`` has it. On the servers, ``endpoints`` holds
    every advertised listener (name -> host:port) so a client gets the one it came through (:meth:`for_listener`)."""

    __slots__ = ("_id", "_host", "_port", "_type", "_metrics_port", "_endpoints", "_rack")

    def __init__(self, id: int, host: str, port: int, server_type: str,  # noqa: A002 - the official name
                 metrics_port: int = 0, endpoints: tuple[tuple[str, str], ...] = (), rack: str | None = None) -> None:
        self._id = id
        self._host = host
        self._port = port
        self._type = server_type
        self._metrics_port = metrics_port
        self._endpoints = tuple(endpoints)
        self._rack = rack or None

    id = property(lambda self: self._id)
    host = property(lambda self: self._host)
    port = property(lambda self: self._port)
    server_type = property(lambda self: self._type)
    metrics_port = property(lambda self: self._metrics_port)
    endpoints = property(lambda self: self._endpoints)
    rack = property(lambda self: self._rack)

    def with_metrics_port(self, metrics_port: int) -> ServerNode:
        return ServerNode(self._id, self._host, self._port, self._type, metrics_port, self._endpoints, self._rack)

    def for_listener(self, listener: str | None) -> ServerNode:
        """This node at its ``listener`` address (itself when it has no such listener)."""
        for name, address in self._endpoints:
            if name == listener:
                host, _, port = address.rpartition(":")
                return ServerNode(self._id, host, int(port), self._type, self._metrics_port, self._endpoints,
                                  self._rack)
        return self

    @property
    def uid(self) -> str:
        return f"{'cs' if self._type == 'CoordinatorServer' else 'ts'}-{self._id}"

    @property
    def address(self) -> str:
        return f"{self._host}:{self._port}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ServerNode) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return (self._id, self._host, self._port, self._type)

    def __repr__(self) -> str:
        return f"ServerNode(id={self._id}, host={self._host!r}, port={self._port}, server_type={self._type!r})"

    def to_pb(self) -> pb.ServerNodePb:
        return pb.ServerNodePb(id=self._id, host=self._host, port=self._port, server_type=self._type,
                               metrics_port=self._metrics_port, rack=self._rack or "")

    @classmethod
    def from_pb(cls, msg: pb.ServerNodePb) -> ServerNode:
        return cls(msg.id, msg.host, msg.port, msg.server_type, msg.metrics_port, rack=msg.rack or None)


class ServerTag(IntEnum):
    """A tag an operator puts on tablet servers (Fluss's ``ServerTag``, same numbers on the wire):
    ``PERMANENT_OFFLINE`` drains the server (every replica moves off; it can then be retired),
    ``TEMPORARY_OFFLINE`` moves its leaderships off and keeps its replicas (maintenance)."""

    PERMANENT_OFFLINE = 0
    TEMPORARY_OFFLINE = 1


class AlterConfigOpType(IntEnum):
    """How :class:`AlterConfig` changes a dynamic server option (Fluss's ``AlterConfigOpType``, same numbers on the
    wire): ``SET`` it, or ``DELETE`` the override (back to the servers' own value). APPEND and SUBTRACT (list
    options in Fluss) are refused by the servers: no dynamic option here is a list."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class AlterConfig:
    """One change of ``Admin.alter_cluster_configs`` (Fluss's ``AlterConfig``): ``value`` is ignored by DELETE."""

    key: str
    value: str | None = None
    op_type: AlterConfigOpType = AlterConfigOpType.SET

    def to_pb(self) -> pb.AlterConfigPb:
        msg = pb.AlterConfigPb(key=self.key, op_type=int(AlterConfigOpType(self.op_type)))
        if self.value is not None:
            msg.value = str(self.value)
        return msg


@dataclass(frozen=True)
class ConfigEntry:
    """A server option as ``Admin.describe_cluster_configs`` reports it (Fluss's ``ConfigEntry``): ``source`` is
    ``DYNAMIC_SERVER_CONFIG`` (set with ``alter_cluster_configs``), ``INITIAL_SERVER_CONFIG`` (the servers'
    ``server.yaml``) or ``DEFAULT_CONFIG``; secrets come back masked."""

    key: str
    value: str | None
    source: str

    @classmethod
    def from_pb(cls, msg: pb.ConfigEntryPb) -> ConfigEntry:
        return cls(msg.key, msg.value if msg.HasField("value") else None, msg.config_source)


class GoalType(IntEnum):
    """A rebalance goal (Fluss's ``GoalType``, same numbers on the wire), given to ``Admin.rebalance`` in priority
    order."""

    REPLICA_DISTRIBUTION = 0
    LEADER_DISTRIBUTION = 1
    RACK_AWARE = 2


class RebalanceStatus(IntEnum):
    """Status of a rebalance and of each of its buckets (Fluss's ``RebalanceStatus``, same numbers)."""

    NOT_STARTED = 0
    REBALANCING = 1
    FAILED = 2
    COMPLETED = 3
    CANCELED = 4
    TIMEOUT = 5

    @property
    def is_final(self) -> bool:
        return self in (RebalanceStatus.FAILED, RebalanceStatus.COMPLETED, RebalanceStatus.CANCELED,
                        RebalanceStatus.TIMEOUT)


@dataclass(frozen=True)
class RebalanceResultForBucket:
    """One bucket of a rebalance plan (Fluss's ``RebalanceResultForBucket``): its replicas and leader before and
    after (the new leader is the first new replica) and its status."""

    table_path: TablePath | None  # None: the table was dropped since
    table_id: int
    partition_id: int | None
    partition_name: str | None
    bucket_id: int
    original_leader: int
    new_leader: int
    original_replicas: list[int]
    new_replicas: list[int]
    status: RebalanceStatus

    @property
    def table_bucket(self) -> TableBucket:
        return TableBucket(self.table_id, self.bucket_id, self.partition_id)

    @classmethod
    def from_pb(cls, msg: pb.RebalanceBucketPb) -> RebalanceResultForBucket:
        return cls(TablePath.from_pb(msg.table_path) if msg.HasField("table_path") else None, msg.table_id,
                   msg.partition_id if msg.partition_id >= 0 else None, msg.partition_name or None, msg.bucket_id,
                   msg.original_leader, msg.new_leader, list(msg.original_replicas), list(msg.new_replicas),
                   RebalanceStatus(msg.status))


@dataclass(frozen=True)
class RebalanceProgress:
    """A rebalance's progress (Fluss's ``RebalanceProgress``): ``progress`` is the share of its buckets in a final
    status (0.0 .. 1.0; 1.0 for an empty plan)."""

    rebalance_id: str
    status: RebalanceStatus
    progress: float
    goals: list[GoalType]
    buckets: list[RebalanceResultForBucket]

    def format_as_percentage(self) -> str:
        return f"{self.progress * 100:.2f}%"

    @classmethod
    def from_pb(cls, msg: pb.ListRebalanceProgressResponse) -> RebalanceProgress:
        return cls(msg.rebalance_id, RebalanceStatus(msg.rebalance_status), msg.progress,
                   [GoalType(g) for g in msg.goals], [RebalanceResultForBucket.from_pb(b) for b in msg.buckets])


@dataclass(frozen=True)
class BucketReassignment:
    """A bucket moving from ``original_replicas`` to ``target_replicas`` (``Admin.list_reassignments``);
    ``replicas``, ``isr`` and ``leader`` are its state now."""

    table_path: TablePath
    table_id: int
    partition_id: int | None
    partition_name: str | None
    bucket_id: int
    original_replicas: list[int]
    target_replicas: list[int]
    replicas: list[int]
    isr: list[int]
    leader: int

    @classmethod
    def from_pb(cls, msg: pb.ReassignmentPb) -> BucketReassignment:
        return cls(TablePath.from_pb(msg.table_path), msg.table_id,
                   msg.partition_id if msg.partition_id >= 0 else None, msg.partition_name or None, msg.bucket_id,
                   list(msg.original_replicas), list(msg.target_replicas), list(msg.replicas), list(msg.isr),
                   msg.leader)


class TableBucket:
    """A bucket of a table (or of one partition of it)."""

    __slots__ = ("_table_id", "_partition_id", "_bucket")

    def __init__(self, table_id: int, bucket: int, partition_id: int | None = None) -> None:
        self._table_id = table_id
        self._bucket = bucket
        self._partition_id = None if partition_id is None or partition_id < 0 else partition_id

    @staticmethod
    def with_partition(table_id: int, partition_id: int, bucket: int) -> TableBucket:
        return TableBucket(table_id, bucket, partition_id)

    table_id = property(lambda self: self._table_id)
    bucket_id = property(lambda self: self._bucket)
    partition_id = property(lambda self: self._partition_id)

    @property
    def partition_id_or_none_value(self) -> int:
        """The wire form: -1 when not partitioned."""
        return NO_PARTITION if self._partition_id is None else self._partition_id

    def _key(self) -> tuple[int, int, int]:
        return (self._table_id, self.partition_id_or_none_value, self._bucket)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TableBucket) and self._key() == other._key()

    def __lt__(self, other: TableBucket) -> bool:
        return self._key() < other._key()

    def __repr__(self) -> str:
        part = f", partition_id={self._partition_id}" if self._partition_id is not None else ""
        return f"TableBucket(table_id={self._table_id}{part}, bucket={self._bucket})"

    __str__ = __repr__


class OffsetSpec:
    """Which offset ``list_offsets`` returns: earliest, latest, or the first at/after a timestamp."""

    EARLIEST, LATEST, TIMESTAMP = 0, 1, 2

    def __init__(self, kind: int, timestamp: int = 0) -> None:
        self.kind = kind
        self.timestamp_ms = timestamp

    @staticmethod
    def earliest() -> OffsetSpec:
        return OffsetSpec(OffsetSpec.EARLIEST)

    @staticmethod
    def latest() -> OffsetSpec:
        return OffsetSpec(OffsetSpec.LATEST)

    @staticmethod
    def timestamp(ts: int) -> OffsetSpec:
        return OffsetSpec(OffsetSpec.TIMESTAMP, ts)

    def __repr__(self) -> str:
        return {0: "OffsetSpec.earliest()", 1: "OffsetSpec.latest()"}.get(
            self.kind, f"OffsetSpec.timestamp({self.timestamp_ms})")


class LakeSnapshot:
    """The latest lake snapshot of a table: the lake's snapshot id + the next Fluss offset to tier per bucket
    (the official client's ``LakeSnapshot``: read-only ``snapshot_id`` and ``table_buckets_offset``,
    ``get_bucket_offset``, ``get_table_buckets``; ``table_id``, ``max_timestamps``, ``partition_names`` and
    ``commit_time`` are this client's additions)."""

    def __init__(self, snapshot_id: int, table_buckets_offset: dict[TableBucket, int] | None = None,
                 table_id: int = -1, max_timestamps: dict[TableBucket, int] | None = None,
                 partition_names: dict[int, str] | None = None, commit_time: int = 0) -> None:
        self._snapshot_id = snapshot_id
        self._offsets = dict(table_buckets_offset or {})
        self.table_id = table_id
        self.max_timestamps = dict(max_timestamps or {})
        self.partition_names = dict(partition_names or {})
        self.commit_time = commit_time

    @property
    def snapshot_id(self) -> int:
        return self._snapshot_id

    @property
    def table_buckets_offset(self) -> dict[TableBucket, int]:
        return self._offsets

    def get_bucket_offset(self, bucket: TableBucket) -> int | None:
        return self._offsets.get(bucket)

    def get_table_buckets(self) -> list[TableBucket]:
        return sorted(self._offsets)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LakeSnapshot) and (self._snapshot_id, self._offsets, self.table_id) == (
            other._snapshot_id, other._offsets, other.table_id)

    __hash__ = None  # mutable

    def __str__(self) -> str:
        return self.__repr__()

    @classmethod
    def from_pb(cls, msg: pb.LakeSnapshotPb) -> LakeSnapshot:
        out = cls(snapshot_id=msg.snapshot_id, table_id=msg.table_id, commit_time=msg.commit_time)
        for b in msg.buckets:
            pid = None if b.partition_id == NO_PARTITION else b.partition_id
            tb = TableBucket(msg.table_id, b.bucket_id, pid)
            out.table_buckets_offset[tb] = b.log_offset
            out.max_timestamps[tb] = b.max_timestamp
            if b.partition_name:
                out.partition_names[b.partition_id] = b.partition_name
        return out

    def to_pb(self) -> pb.LakeSnapshotPb:
        buckets = []
        for tb in sorted(self.table_buckets_offset):
            pid = tb.partition_id_or_none_value
            buckets.append(pb.LakeBucketOffsetPb(
                partition_id=pid, bucket_id=tb.bucket_id, log_offset=self.table_buckets_offset[tb],
                max_timestamp=self.max_timestamps.get(tb, -1), partition_name=self.partition_names.get(pid, "")))
        return pb.LakeSnapshotPb(table_id=self.table_id, snapshot_id=self.snapshot_id, buckets=buckets,
                                 commit_time=self.commit_time)

    def __repr__(self) -> str:
        offsets = {tb.bucket_id if tb.partition_id is None else (tb.partition_id, tb.bucket_id): o
                   for tb, o in sorted(self.table_buckets_offset.items())}
        return f"LakeSnapshot(snapshot_id={self.snapshot_id}, offsets={offsets})"
