from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ErrorInfo(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class TablePathPb(_message.Message):
    __slots__ = ("database_name", "table_name")
    DATABASE_NAME_FIELD_NUMBER: _ClassVar[int]
    TABLE_NAME_FIELD_NUMBER: _ClassVar[int]
    database_name: str
    table_name: str
    def __init__(self, database_name: _Optional[str] = ..., table_name: _Optional[str] = ...) -> None: ...

class ServerNodePb(_message.Message):
    __slots__ = ("id", "host", "port", "server_type", "metrics_port", "rack")
    ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SERVER_TYPE_FIELD_NUMBER: _ClassVar[int]
    METRICS_PORT_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    id: int
    host: str
    port: int
    server_type: str
    metrics_port: int
    rack: str
    def __init__(self, id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., server_type: _Optional[str] = ..., metrics_port: _Optional[int] = ..., rack: _Optional[str] = ...) -> None: ...

class ColumnPb(_message.Message):
    __slots__ = ("name", "data_type", "comment", "has_comment")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    HAS_COMMENT_FIELD_NUMBER: _ClassVar[int]
    name: str
    data_type: str
    comment: str
    has_comment: bool
    def __init__(self, name: _Optional[str] = ..., data_type: _Optional[str] = ..., comment: _Optional[str] = ..., has_comment: bool = ...) -> None: ...

class SchemaPb(_message.Message):
    __slots__ = ("columns", "primary_keys")
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_KEYS_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedCompositeFieldContainer[ColumnPb]
    primary_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, columns: _Optional[_Iterable[_Union[ColumnPb, _Mapping]]] = ..., primary_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class TableDescriptorPb(_message.Message):
    __slots__ = ("schema", "partition_keys", "bucket_count", "bucket_keys", "comment", "has_comment", "properties", "custom_properties")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class CustomPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PARTITION_KEYS_FIELD_NUMBER: _ClassVar[int]
    BUCKET_COUNT_FIELD_NUMBER: _ClassVar[int]
    BUCKET_KEYS_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    HAS_COMMENT_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    schema: SchemaPb
    partition_keys: _containers.RepeatedScalarFieldContainer[str]
    bucket_count: int
    bucket_keys: _containers.RepeatedScalarFieldContainer[str]
    comment: str
    has_comment: bool
    properties: _containers.ScalarMap[str, str]
    custom_properties: _containers.ScalarMap[str, str]
    def __init__(self, schema: _Optional[_Union[SchemaPb, _Mapping]] = ..., partition_keys: _Optional[_Iterable[str]] = ..., bucket_count: _Optional[int] = ..., bucket_keys: _Optional[_Iterable[str]] = ..., comment: _Optional[str] = ..., has_comment: bool = ..., properties: _Optional[_Mapping[str, str]] = ..., custom_properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TableInfoPb(_message.Message):
    __slots__ = ("table_path", "table_id", "schema_id", "descriptor", "created_time", "modified_time", "schema_column_counts")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTOR_FIELD_NUMBER: _ClassVar[int]
    CREATED_TIME_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_TIME_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_COLUMN_COUNTS_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    table_id: int
    schema_id: int
    descriptor: TableDescriptorPb
    created_time: int
    modified_time: int
    schema_column_counts: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., table_id: _Optional[int] = ..., schema_id: _Optional[int] = ..., descriptor: _Optional[_Union[TableDescriptorPb, _Mapping]] = ..., created_time: _Optional[int] = ..., modified_time: _Optional[int] = ..., schema_column_counts: _Optional[_Iterable[int]] = ...) -> None: ...

class DatabaseDescriptorPb(_message.Message):
    __slots__ = ("comment", "has_comment", "custom_properties")
    class CustomPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    HAS_COMMENT_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    comment: str
    has_comment: bool
    custom_properties: _containers.ScalarMap[str, str]
    def __init__(self, comment: _Optional[str] = ..., has_comment: bool = ..., custom_properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class DatabaseInfoPb(_message.Message):
    __slots__ = ("database_name", "descriptor", "created_time", "modified_time")
    DATABASE_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTOR_FIELD_NUMBER: _ClassVar[int]
    CREATED_TIME_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_TIME_FIELD_NUMBER: _ClassVar[int]
    database_name: str
    descriptor: DatabaseDescriptorPb
    created_time: int
    modified_time: int
    def __init__(self, database_name: _Optional[str] = ..., descriptor: _Optional[_Union[DatabaseDescriptorPb, _Mapping]] = ..., created_time: _Optional[int] = ..., modified_time: _Optional[int] = ...) -> None: ...

class PartitionInfoPb(_message.Message):
    __slots__ = ("partition_id", "partition_name", "partition_spec", "bucket_count")
    class PartitionSpecEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_SPEC_FIELD_NUMBER: _ClassVar[int]
    BUCKET_COUNT_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    partition_name: str
    partition_spec: _containers.ScalarMap[str, str]
    bucket_count: int
    def __init__(self, partition_id: _Optional[int] = ..., partition_name: _Optional[str] = ..., partition_spec: _Optional[_Mapping[str, str]] = ..., bucket_count: _Optional[int] = ...) -> None: ...

class BucketMetadataPb(_message.Message):
    __slots__ = ("bucket_id", "leader_id", "leader_epoch", "replicas", "isr")
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    bucket_id: int
    leader_id: int
    leader_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, bucket_id: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ...) -> None: ...

class TableMetadataPb(_message.Message):
    __slots__ = ("table_info", "buckets")
    TABLE_INFO_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table_info: TableInfoPb
    buckets: _containers.RepeatedCompositeFieldContainer[BucketMetadataPb]
    def __init__(self, table_info: _Optional[_Union[TableInfoPb, _Mapping]] = ..., buckets: _Optional[_Iterable[_Union[BucketMetadataPb, _Mapping]]] = ...) -> None: ...

class PartitionMetadataPb(_message.Message):
    __slots__ = ("table_id", "partition_name", "partition_id", "buckets", "bucket_count")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    BUCKET_COUNT_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_name: str
    partition_id: int
    buckets: _containers.RepeatedCompositeFieldContainer[BucketMetadataPb]
    bucket_count: int
    def __init__(self, table_id: _Optional[int] = ..., partition_name: _Optional[str] = ..., partition_id: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[BucketMetadataPb, _Mapping]]] = ..., bucket_count: _Optional[int] = ...) -> None: ...

class CreateDatabaseRequest(_message.Message):
    __slots__ = ("database_name", "descriptor", "ignore_if_exists")
    DATABASE_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTOR_FIELD_NUMBER: _ClassVar[int]
    IGNORE_IF_EXISTS_FIELD_NUMBER: _ClassVar[int]
    database_name: str
    descriptor: DatabaseDescriptorPb
    ignore_if_exists: bool
    def __init__(self, database_name: _Optional[str] = ..., descriptor: _Optional[_Union[DatabaseDescriptorPb, _Mapping]] = ..., ignore_if_exists: bool = ...) -> None: ...

class CreateDatabaseResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class DropDatabaseRequest(_message.Message):
    __slots__ = ("database_name", "ignore_if_not_exists", "cascade")
    DATABASE_NAME_FIELD_NUMBER: _ClassVar[int]
    IGNORE_IF_NOT_EXISTS_FIELD_NUMBER: _ClassVar[int]
    CASCADE_FIELD_NUMBER: _ClassVar[int]
    database_name: str
    ignore_if_not_exists: bool
    cascade: bool
    def __init__(self, database_name: _Optional[str] = ..., ignore_if_not_exists: bool = ..., cascade: bool = ...) -> None: ...

class DropDatabaseResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class ListDatabasesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDatabasesResponse(_message.Message):
    __slots__ = ("error", "database_names")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DATABASE_NAMES_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    database_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., database_names: _Optional[_Iterable[str]] = ...) -> None: ...

class DatabaseExistsRequest(_message.Message):
    __slots__ = ("database_name",)
    DATABASE_NAME_FIELD_NUMBER: _ClassVar[int]
    database_name: str
    def __init__(self, database_name: _Optional[str] = ...) -> None: ...

class DatabaseExistsResponse(_message.Message):
    __slots__ = ("error", "exists")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    exists: bool
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., exists: bool = ...) -> None: ...

class GetDatabaseInfoRequest(_message.Message):
    __slots__ = ("database_name",)
    DATABASE_NAME_FIELD_NUMBER: _ClassVar[int]
    database_name: str
    def __init__(self, database_name: _Optional[str] = ...) -> None: ...

class GetDatabaseInfoResponse(_message.Message):
    __slots__ = ("error", "database_info")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DATABASE_INFO_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    database_info: DatabaseInfoPb
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., database_info: _Optional[_Union[DatabaseInfoPb, _Mapping]] = ...) -> None: ...

class CreateTableRequest(_message.Message):
    __slots__ = ("table_path", "descriptor", "ignore_if_exists")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTOR_FIELD_NUMBER: _ClassVar[int]
    IGNORE_IF_EXISTS_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    descriptor: TableDescriptorPb
    ignore_if_exists: bool
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., descriptor: _Optional[_Union[TableDescriptorPb, _Mapping]] = ..., ignore_if_exists: bool = ...) -> None: ...

class CreateTableResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class DropTableRequest(_message.Message):
    __slots__ = ("table_path", "ignore_if_not_exists")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    IGNORE_IF_NOT_EXISTS_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    ignore_if_not_exists: bool
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., ignore_if_not_exists: bool = ...) -> None: ...

class DropTableResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class SetOptionPb(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ResetOptionPb(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class AddColumnPb(_message.Message):
    __slots__ = ("name", "data_type", "comment", "has_comment", "position")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    HAS_COMMENT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    name: str
    data_type: str
    comment: str
    has_comment: bool
    position: str
    def __init__(self, name: _Optional[str] = ..., data_type: _Optional[str] = ..., comment: _Optional[str] = ..., has_comment: bool = ..., position: _Optional[str] = ...) -> None: ...

class TableChangePb(_message.Message):
    __slots__ = ("set_option", "reset_option", "add_column")
    SET_OPTION_FIELD_NUMBER: _ClassVar[int]
    RESET_OPTION_FIELD_NUMBER: _ClassVar[int]
    ADD_COLUMN_FIELD_NUMBER: _ClassVar[int]
    set_option: SetOptionPb
    reset_option: ResetOptionPb
    add_column: AddColumnPb
    def __init__(self, set_option: _Optional[_Union[SetOptionPb, _Mapping]] = ..., reset_option: _Optional[_Union[ResetOptionPb, _Mapping]] = ..., add_column: _Optional[_Union[AddColumnPb, _Mapping]] = ...) -> None: ...

class AlterTableRequest(_message.Message):
    __slots__ = ("table_path", "changes", "ignore_if_not_exists")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    IGNORE_IF_NOT_EXISTS_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    changes: _containers.RepeatedCompositeFieldContainer[TableChangePb]
    ignore_if_not_exists: bool
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., changes: _Optional[_Iterable[_Union[TableChangePb, _Mapping]]] = ..., ignore_if_not_exists: bool = ...) -> None: ...

class AlterTableResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class GetTableInfoRequest(_message.Message):
    __slots__ = ("table_path",)
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ...) -> None: ...

class GetTableInfoResponse(_message.Message):
    __slots__ = ("error", "table_info")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TABLE_INFO_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    table_info: TableInfoPb
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., table_info: _Optional[_Union[TableInfoPb, _Mapping]] = ...) -> None: ...

class ListTablesRequest(_message.Message):
    __slots__ = ("database_name",)
    DATABASE_NAME_FIELD_NUMBER: _ClassVar[int]
    database_name: str
    def __init__(self, database_name: _Optional[str] = ...) -> None: ...

class ListTablesResponse(_message.Message):
    __slots__ = ("error", "table_names")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TABLE_NAMES_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    table_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., table_names: _Optional[_Iterable[str]] = ...) -> None: ...

class TableExistsRequest(_message.Message):
    __slots__ = ("table_path",)
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ...) -> None: ...

class TableExistsResponse(_message.Message):
    __slots__ = ("error", "exists")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    exists: bool
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., exists: bool = ...) -> None: ...

class BucketAssignmentPb(_message.Message):
    __slots__ = ("bucket_id", "replicas")
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    bucket_id: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, bucket_id: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class AlterTableAssignmentRequest(_message.Message):
    __slots__ = ("table_path", "partition_name", "buckets")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    partition_name: str
    buckets: _containers.RepeatedCompositeFieldContainer[BucketAssignmentPb]
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., partition_name: _Optional[str] = ..., buckets: _Optional[_Iterable[_Union[BucketAssignmentPb, _Mapping]]] = ...) -> None: ...

class AlterTableAssignmentResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class ReassignmentPb(_message.Message):
    __slots__ = ("table_path", "table_id", "partition_id", "partition_name", "bucket_id", "original_replicas", "target_replicas", "replicas", "isr", "leader")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    TARGET_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    table_id: int
    partition_id: int
    partition_name: str
    bucket_id: int
    original_replicas: _containers.RepeatedScalarFieldContainer[int]
    target_replicas: _containers.RepeatedScalarFieldContainer[int]
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    leader: int
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., partition_name: _Optional[str] = ..., bucket_id: _Optional[int] = ..., original_replicas: _Optional[_Iterable[int]] = ..., target_replicas: _Optional[_Iterable[int]] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., leader: _Optional[int] = ...) -> None: ...

class ListReassignmentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListReassignmentsResponse(_message.Message):
    __slots__ = ("error", "reassignments")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    reassignments: _containers.RepeatedCompositeFieldContainer[ReassignmentPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., reassignments: _Optional[_Iterable[_Union[ReassignmentPb, _Mapping]]] = ...) -> None: ...

class AddServerTagRequest(_message.Message):
    __slots__ = ("server_ids", "server_tag")
    SERVER_IDS_FIELD_NUMBER: _ClassVar[int]
    SERVER_TAG_FIELD_NUMBER: _ClassVar[int]
    server_ids: _containers.RepeatedScalarFieldContainer[int]
    server_tag: int
    def __init__(self, server_ids: _Optional[_Iterable[int]] = ..., server_tag: _Optional[int] = ...) -> None: ...

class AddServerTagResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class RemoveServerTagRequest(_message.Message):
    __slots__ = ("server_ids", "server_tag")
    SERVER_IDS_FIELD_NUMBER: _ClassVar[int]
    SERVER_TAG_FIELD_NUMBER: _ClassVar[int]
    server_ids: _containers.RepeatedScalarFieldContainer[int]
    server_tag: int
    def __init__(self, server_ids: _Optional[_Iterable[int]] = ..., server_tag: _Optional[int] = ...) -> None: ...

class RemoveServerTagResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class RebalanceRequest(_message.Message):
    __slots__ = ("goals",)
    GOALS_FIELD_NUMBER: _ClassVar[int]
    goals: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, goals: _Optional[_Iterable[int]] = ...) -> None: ...

class RebalanceResponse(_message.Message):
    __slots__ = ("error", "rebalance_id")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_ID_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    rebalance_id: str
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., rebalance_id: _Optional[str] = ...) -> None: ...

class RebalanceBucketPb(_message.Message):
    __slots__ = ("table_path", "table_id", "partition_id", "partition_name", "bucket_id", "original_leader", "new_leader", "original_replicas", "new_replicas", "status")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_LEADER_FIELD_NUMBER: _ClassVar[int]
    NEW_LEADER_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    NEW_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    table_id: int
    partition_id: int
    partition_name: str
    bucket_id: int
    original_leader: int
    new_leader: int
    original_replicas: _containers.RepeatedScalarFieldContainer[int]
    new_replicas: _containers.RepeatedScalarFieldContainer[int]
    status: int
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., partition_name: _Optional[str] = ..., bucket_id: _Optional[int] = ..., original_leader: _Optional[int] = ..., new_leader: _Optional[int] = ..., original_replicas: _Optional[_Iterable[int]] = ..., new_replicas: _Optional[_Iterable[int]] = ..., status: _Optional[int] = ...) -> None: ...

class ListRebalanceProgressRequest(_message.Message):
    __slots__ = ("rebalance_id",)
    REBALANCE_ID_FIELD_NUMBER: _ClassVar[int]
    rebalance_id: str
    def __init__(self, rebalance_id: _Optional[str] = ...) -> None: ...

class ListRebalanceProgressResponse(_message.Message):
    __slots__ = ("error", "rebalance_id", "rebalance_status", "progress", "goals", "buckets")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_ID_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_STATUS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    GOALS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    rebalance_id: str
    rebalance_status: int
    progress: float
    goals: _containers.RepeatedScalarFieldContainer[int]
    buckets: _containers.RepeatedCompositeFieldContainer[RebalanceBucketPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., rebalance_id: _Optional[str] = ..., rebalance_status: _Optional[int] = ..., progress: _Optional[float] = ..., goals: _Optional[_Iterable[int]] = ..., buckets: _Optional[_Iterable[_Union[RebalanceBucketPb, _Mapping]]] = ...) -> None: ...

class CancelRebalanceRequest(_message.Message):
    __slots__ = ("rebalance_id",)
    REBALANCE_ID_FIELD_NUMBER: _ClassVar[int]
    rebalance_id: str
    def __init__(self, rebalance_id: _Optional[str] = ...) -> None: ...

class CancelRebalanceResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class CreatePartitionRequest(_message.Message):
    __slots__ = ("table_path", "partition_spec", "ignore_if_exists")
    class PartitionSpecEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_SPEC_FIELD_NUMBER: _ClassVar[int]
    IGNORE_IF_EXISTS_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    partition_spec: _containers.ScalarMap[str, str]
    ignore_if_exists: bool
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., partition_spec: _Optional[_Mapping[str, str]] = ..., ignore_if_exists: bool = ...) -> None: ...

class CreatePartitionResponse(_message.Message):
    __slots__ = ("error", "partition_id")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    partition_id: int
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., partition_id: _Optional[int] = ...) -> None: ...

class DropPartitionRequest(_message.Message):
    __slots__ = ("table_path", "partition_spec", "ignore_if_not_exists")
    class PartitionSpecEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_SPEC_FIELD_NUMBER: _ClassVar[int]
    IGNORE_IF_NOT_EXISTS_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    partition_spec: _containers.ScalarMap[str, str]
    ignore_if_not_exists: bool
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., partition_spec: _Optional[_Mapping[str, str]] = ..., ignore_if_not_exists: bool = ...) -> None: ...

class DropPartitionResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class ListPartitionInfosRequest(_message.Message):
    __slots__ = ("table_path", "partition_spec")
    class PartitionSpecEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_SPEC_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    partition_spec: _containers.ScalarMap[str, str]
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., partition_spec: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ListPartitionInfosResponse(_message.Message):
    __slots__ = ("error", "partitions")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionInfoPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[PartitionInfoPb, _Mapping]]] = ...) -> None: ...

class GetServerNodesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServerNodesResponse(_message.Message):
    __slots__ = ("error", "nodes")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    nodes: _containers.RepeatedCompositeFieldContainer[ServerNodePb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[ServerNodePb, _Mapping]]] = ...) -> None: ...

class PartitionRefPb(_message.Message):
    __slots__ = ("table_path", "partition_name")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    partition_name: str
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., partition_name: _Optional[str] = ...) -> None: ...

class GetMetadataRequest(_message.Message):
    __slots__ = ("table_paths", "partitions", "partition_ids")
    TABLE_PATHS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_IDS_FIELD_NUMBER: _ClassVar[int]
    table_paths: _containers.RepeatedCompositeFieldContainer[TablePathPb]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionRefPb]
    partition_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, table_paths: _Optional[_Iterable[_Union[TablePathPb, _Mapping]]] = ..., partitions: _Optional[_Iterable[_Union[PartitionRefPb, _Mapping]]] = ..., partition_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class GetMetadataResponse(_message.Message):
    __slots__ = ("error", "coordinator", "tablet_servers", "tables", "partitions")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    TABLET_SERVERS_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    coordinator: ServerNodePb
    tablet_servers: _containers.RepeatedCompositeFieldContainer[ServerNodePb]
    tables: _containers.RepeatedCompositeFieldContainer[TableMetadataPb]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionMetadataPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., coordinator: _Optional[_Union[ServerNodePb, _Mapping]] = ..., tablet_servers: _Optional[_Iterable[_Union[ServerNodePb, _Mapping]]] = ..., tables: _Optional[_Iterable[_Union[TableMetadataPb, _Mapping]]] = ..., partitions: _Optional[_Iterable[_Union[PartitionMetadataPb, _Mapping]]] = ...) -> None: ...

class AclPb(_message.Message):
    __slots__ = ("resource_type", "resource_name", "principal", "operation", "permission", "host")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    resource_type: str
    resource_name: str
    principal: str
    operation: str
    permission: str
    host: str
    def __init__(self, resource_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., principal: _Optional[str] = ..., operation: _Optional[str] = ..., permission: _Optional[str] = ..., host: _Optional[str] = ...) -> None: ...

class AclFilterPb(_message.Message):
    __slots__ = ("resource_type", "resource_name", "principal", "operation", "permission", "host")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    resource_type: str
    resource_name: str
    principal: str
    operation: str
    permission: str
    host: str
    def __init__(self, resource_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., principal: _Optional[str] = ..., operation: _Optional[str] = ..., permission: _Optional[str] = ..., host: _Optional[str] = ...) -> None: ...

class CreateAclsRequest(_message.Message):
    __slots__ = ("acls",)
    ACLS_FIELD_NUMBER: _ClassVar[int]
    acls: _containers.RepeatedCompositeFieldContainer[AclPb]
    def __init__(self, acls: _Optional[_Iterable[_Union[AclPb, _Mapping]]] = ...) -> None: ...

class CreateAclsResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class ListAclsRequest(_message.Message):
    __slots__ = ("filter",)
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: AclFilterPb
    def __init__(self, filter: _Optional[_Union[AclFilterPb, _Mapping]] = ...) -> None: ...

class ListAclsResponse(_message.Message):
    __slots__ = ("error", "acls")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ACLS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    acls: _containers.RepeatedCompositeFieldContainer[AclPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., acls: _Optional[_Iterable[_Union[AclPb, _Mapping]]] = ...) -> None: ...

class DropAclsRequest(_message.Message):
    __slots__ = ("filters",)
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[AclFilterPb]
    def __init__(self, filters: _Optional[_Iterable[_Union[AclFilterPb, _Mapping]]] = ...) -> None: ...

class DropAclsResponse(_message.Message):
    __slots__ = ("error", "dropped")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    dropped: _containers.RepeatedCompositeFieldContainer[AclPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., dropped: _Optional[_Iterable[_Union[AclPb, _Mapping]]] = ...) -> None: ...

class LakeBucketOffsetPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "log_offset", "max_timestamp", "partition_name")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    LOG_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    log_offset: int
    max_timestamp: int
    partition_name: str
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., log_offset: _Optional[int] = ..., max_timestamp: _Optional[int] = ..., partition_name: _Optional[str] = ...) -> None: ...

class LakeSnapshotPb(_message.Message):
    __slots__ = ("table_id", "snapshot_id", "buckets", "commit_time")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    snapshot_id: int
    buckets: _containers.RepeatedCompositeFieldContainer[LakeBucketOffsetPb]
    commit_time: int
    def __init__(self, table_id: _Optional[int] = ..., snapshot_id: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[LakeBucketOffsetPb, _Mapping]]] = ..., commit_time: _Optional[int] = ...) -> None: ...

class ListLakeTablesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListLakeTablesResponse(_message.Message):
    __slots__ = ("error", "tables", "latest_snapshots")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    LATEST_SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    tables: _containers.RepeatedCompositeFieldContainer[TableInfoPb]
    latest_snapshots: _containers.RepeatedCompositeFieldContainer[LakeSnapshotPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., tables: _Optional[_Iterable[_Union[TableInfoPb, _Mapping]]] = ..., latest_snapshots: _Optional[_Iterable[_Union[LakeSnapshotPb, _Mapping]]] = ...) -> None: ...

class CommitLakeTableSnapshotRequest(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: LakeSnapshotPb
    def __init__(self, snapshot: _Optional[_Union[LakeSnapshotPb, _Mapping]] = ...) -> None: ...

class CommitLakeTableSnapshotResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class GetLatestLakeSnapshotRequest(_message.Message):
    __slots__ = ("table_path",)
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ...) -> None: ...

class GetLatestLakeSnapshotResponse(_message.Message):
    __slots__ = ("error", "snapshot")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    snapshot: LakeSnapshotPb
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., snapshot: _Optional[_Union[LakeSnapshotPb, _Mapping]] = ...) -> None: ...

class InitWriterRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InitWriterResponse(_message.Message):
    __slots__ = ("error", "writer_id")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    WRITER_ID_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    writer_id: int
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., writer_id: _Optional[int] = ...) -> None: ...

class KvSnapshotPb(_message.Message):
    __slots__ = ("table_id", "partition_id", "bucket_id", "snapshot_id", "log_offset", "manifest_path", "create_time")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    LOG_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_PATH_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_id: int
    bucket_id: int
    snapshot_id: int
    log_offset: int
    manifest_path: str
    create_time: int
    def __init__(self, table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., snapshot_id: _Optional[int] = ..., log_offset: _Optional[int] = ..., manifest_path: _Optional[str] = ..., create_time: _Optional[int] = ...) -> None: ...

class GetLatestKvSnapshotsRequest(_message.Message):
    __slots__ = ("table_path", "partition_name")
    TABLE_PATH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    table_path: TablePathPb
    partition_name: str
    def __init__(self, table_path: _Optional[_Union[TablePathPb, _Mapping]] = ..., partition_name: _Optional[str] = ...) -> None: ...

class GetLatestKvSnapshotsResponse(_message.Message):
    __slots__ = ("error", "snapshots")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    snapshots: _containers.RepeatedCompositeFieldContainer[KvSnapshotPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., snapshots: _Optional[_Iterable[_Union[KvSnapshotPb, _Mapping]]] = ...) -> None: ...

class AdjustIsrRequest(_message.Message):
    __slots__ = ("server_id", "bucket", "server_epoch")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SERVER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    server_id: int
    bucket: LeaderAndIsrPb
    server_epoch: int
    def __init__(self, server_id: _Optional[int] = ..., bucket: _Optional[_Union[LeaderAndIsrPb, _Mapping]] = ..., server_epoch: _Optional[int] = ...) -> None: ...

class AdjustIsrResponse(_message.Message):
    __slots__ = ("error", "bucket")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    bucket: LeaderAndIsrPb
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., bucket: _Optional[_Union[LeaderAndIsrPb, _Mapping]] = ...) -> None: ...

class ControlledShutdownRequest(_message.Message):
    __slots__ = ("server_id", "server_epoch")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    server_id: int
    server_epoch: int
    def __init__(self, server_id: _Optional[int] = ..., server_epoch: _Optional[int] = ...) -> None: ...

class ControlledShutdownResponse(_message.Message):
    __slots__ = ("error", "remaining_leaders")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REMAINING_LEADERS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    remaining_leaders: int
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., remaining_leaders: _Optional[int] = ...) -> None: ...

class CommitKvSnapshotRequest(_message.Message):
    __slots__ = ("server_id", "leader_epoch", "snapshot", "server_epoch")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SERVER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    server_id: int
    leader_epoch: int
    snapshot: KvSnapshotPb
    server_epoch: int
    def __init__(self, server_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., snapshot: _Optional[_Union[KvSnapshotPb, _Mapping]] = ..., server_epoch: _Optional[int] = ...) -> None: ...

class ReportStorageStateRequest(_message.Message):
    __slots__ = ("server_id", "server_epoch", "writable", "reason")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    WRITABLE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    server_id: int
    server_epoch: int
    writable: bool
    reason: str
    def __init__(self, server_id: _Optional[int] = ..., server_epoch: _Optional[int] = ..., writable: bool = ..., reason: _Optional[str] = ...) -> None: ...

class ReportStorageStateResponse(_message.Message):
    __slots__ = ("error", "remaining_leaders")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REMAINING_LEADERS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    remaining_leaders: int
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., remaining_leaders: _Optional[int] = ...) -> None: ...

class CommitKvSnapshotResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class GetKvSnapshotRequest(_message.Message):
    __slots__ = ("table_id", "partition_id", "bucket_id")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_id: int
    bucket_id: int
    def __init__(self, table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ...) -> None: ...

class GetKvSnapshotResponse(_message.Message):
    __slots__ = ("error", "found", "snapshot")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    found: bool
    snapshot: KvSnapshotPb
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., found: bool = ..., snapshot: _Optional[_Union[KvSnapshotPb, _Mapping]] = ...) -> None: ...

class ProduceBucketPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "records")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    records: bytes
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., records: _Optional[bytes] = ...) -> None: ...

class ProduceLogRequest(_message.Message):
    __slots__ = ("acks", "table_id", "timeout_ms", "buckets")
    ACKS_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    acks: int
    table_id: int
    timeout_ms: int
    buckets: _containers.RepeatedCompositeFieldContainer[ProduceBucketPb]
    def __init__(self, acks: _Optional[int] = ..., table_id: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[ProduceBucketPb, _Mapping]]] = ...) -> None: ...

class ProduceBucketResultPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "error", "base_offset")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    error: ErrorInfo
    base_offset: int
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., base_offset: _Optional[int] = ...) -> None: ...

class ProduceLogResponse(_message.Message):
    __slots__ = ("buckets", "error")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[ProduceBucketResultPb]
    error: ErrorInfo
    def __init__(self, buckets: _Optional[_Iterable[_Union[ProduceBucketResultPb, _Mapping]]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class FetchBucketPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "fetch_offset", "max_bytes")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    fetch_offset: int
    max_bytes: int
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class FetchTablePb(_message.Message):
    __slots__ = ("table_id", "projection_enabled", "projected_fields", "buckets", "as_arrow")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECTION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    PROJECTED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    AS_ARROW_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    projection_enabled: bool
    projected_fields: _containers.RepeatedScalarFieldContainer[int]
    buckets: _containers.RepeatedCompositeFieldContainer[FetchBucketPb]
    as_arrow: bool
    def __init__(self, table_id: _Optional[int] = ..., projection_enabled: bool = ..., projected_fields: _Optional[_Iterable[int]] = ..., buckets: _Optional[_Iterable[_Union[FetchBucketPb, _Mapping]]] = ..., as_arrow: bool = ...) -> None: ...

class FetchLogRequest(_message.Message):
    __slots__ = ("follower_id", "max_bytes", "min_bytes", "max_wait_ms", "tables")
    FOLLOWER_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    follower_id: int
    max_bytes: int
    min_bytes: int
    max_wait_ms: int
    tables: _containers.RepeatedCompositeFieldContainer[FetchTablePb]
    def __init__(self, follower_id: _Optional[int] = ..., max_bytes: _Optional[int] = ..., min_bytes: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., tables: _Optional[_Iterable[_Union[FetchTablePb, _Mapping]]] = ...) -> None: ...

class FetchBucketResultPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "error", "high_watermark", "log_start_offset", "records", "remote_log_fetch_info", "tiered_offset")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_FETCH_INFO_FIELD_NUMBER: _ClassVar[int]
    TIERED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    error: ErrorInfo
    high_watermark: int
    log_start_offset: int
    records: bytes
    remote_log_fetch_info: RemoteLogFetchInfoPb
    tiered_offset: int
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., high_watermark: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., records: _Optional[bytes] = ..., remote_log_fetch_info: _Optional[_Union[RemoteLogFetchInfoPb, _Mapping]] = ..., tiered_offset: _Optional[int] = ...) -> None: ...

class FetchTableResultPb(_message.Message):
    __slots__ = ("table_id", "buckets")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    buckets: _containers.RepeatedCompositeFieldContainer[FetchBucketResultPb]
    def __init__(self, table_id: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[FetchBucketResultPb, _Mapping]]] = ...) -> None: ...

class FetchLogResponse(_message.Message):
    __slots__ = ("tables", "error")
    TABLES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedCompositeFieldContainer[FetchTableResultPb]
    error: ErrorInfo
    def __init__(self, tables: _Optional[_Iterable[_Union[FetchTableResultPb, _Mapping]]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class ListOffsetsRequest(_message.Message):
    __slots__ = ("follower_id", "offset_type", "timestamp", "table_id", "partition_id", "bucket_ids")
    FOLLOWER_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_TYPE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_IDS_FIELD_NUMBER: _ClassVar[int]
    follower_id: int
    offset_type: int
    timestamp: int
    table_id: int
    partition_id: int
    bucket_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, follower_id: _Optional[int] = ..., offset_type: _Optional[int] = ..., timestamp: _Optional[int] = ..., table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ListOffsetsBucketResultPb(_message.Message):
    __slots__ = ("bucket_id", "error", "offset")
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    bucket_id: int
    error: ErrorInfo
    offset: int
    def __init__(self, bucket_id: _Optional[int] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., offset: _Optional[int] = ...) -> None: ...

class ListOffsetsResponse(_message.Message):
    __slots__ = ("buckets", "error")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[ListOffsetsBucketResultPb]
    error: ErrorInfo
    def __init__(self, buckets: _Optional[_Iterable[_Union[ListOffsetsBucketResultPb, _Mapping]]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class TableStatsBucketPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ...) -> None: ...

class GetTableStatsRequest(_message.Message):
    __slots__ = ("table_id", "buckets")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    buckets: _containers.RepeatedCompositeFieldContainer[TableStatsBucketPb]
    def __init__(self, table_id: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[TableStatsBucketPb, _Mapping]]] = ...) -> None: ...

class TableStatsBucketResultPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "error", "row_count")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ROW_COUNT_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    error: ErrorInfo
    row_count: int
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., row_count: _Optional[int] = ...) -> None: ...

class GetTableStatsResponse(_message.Message):
    __slots__ = ("buckets", "error")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[TableStatsBucketResultPb]
    error: ErrorInfo
    def __init__(self, buckets: _Optional[_Iterable[_Union[TableStatsBucketResultPb, _Mapping]]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class LeaderAndIsrPb(_message.Message):
    __slots__ = ("table_id", "partition_id", "bucket_id", "leader", "leader_epoch", "replicas", "isr", "bucket_epoch")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    BUCKET_EPOCH_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_id: int
    bucket_id: int
    leader: int
    leader_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    bucket_epoch: int
    def __init__(self, table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., bucket_epoch: _Optional[int] = ...) -> None: ...

class NotifyLeaderAndIsrRequest(_message.Message):
    __slots__ = ("coordinator_epoch", "buckets", "table_infos", "partition_infos")
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    TABLE_INFOS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INFOS_FIELD_NUMBER: _ClassVar[int]
    coordinator_epoch: int
    buckets: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrPb]
    table_infos: _containers.RepeatedCompositeFieldContainer[TableInfoPb]
    partition_infos: _containers.RepeatedCompositeFieldContainer[PartitionInfoPb]
    def __init__(self, coordinator_epoch: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[LeaderAndIsrPb, _Mapping]]] = ..., table_infos: _Optional[_Iterable[_Union[TableInfoPb, _Mapping]]] = ..., partition_infos: _Optional[_Iterable[_Union[PartitionInfoPb, _Mapping]]] = ...) -> None: ...

class NotifyLeaderAndIsrResultPb(_message.Message):
    __slots__ = ("table_id", "partition_id", "bucket_id", "error")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_id: int
    bucket_id: int
    error: ErrorInfo
    def __init__(self, table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class NotifyLeaderAndIsrResponse(_message.Message):
    __slots__ = ("error", "buckets")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    buckets: _containers.RepeatedCompositeFieldContainer[NotifyLeaderAndIsrResultPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., buckets: _Optional[_Iterable[_Union[NotifyLeaderAndIsrResultPb, _Mapping]]] = ...) -> None: ...

class StopReplicaPb(_message.Message):
    __slots__ = ("table_id", "partition_id", "bucket_id", "delete")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_id: int
    bucket_id: int
    delete: bool
    def __init__(self, table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., delete: bool = ...) -> None: ...

class StopReplicaRequest(_message.Message):
    __slots__ = ("coordinator_epoch", "buckets")
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    coordinator_epoch: int
    buckets: _containers.RepeatedCompositeFieldContainer[StopReplicaPb]
    def __init__(self, coordinator_epoch: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[StopReplicaPb, _Mapping]]] = ...) -> None: ...

class StopReplicaResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class OffsetForLeaderEpochRequest(_message.Message):
    __slots__ = ("follower_id", "table_id", "partition_id", "bucket_id", "leader_epoch")
    FOLLOWER_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    follower_id: int
    table_id: int
    partition_id: int
    bucket_id: int
    leader_epoch: int
    def __init__(self, follower_id: _Optional[int] = ..., table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class OffsetForLeaderEpochResponse(_message.Message):
    __slots__ = ("error", "leader_epoch", "end_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    leader_epoch: int
    end_offset: int
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., leader_epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...

class PutKvBucketPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "records")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    records: bytes
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., records: _Optional[bytes] = ...) -> None: ...

class PutKvRequest(_message.Message):
    __slots__ = ("acks", "table_id", "timeout_ms", "target_columns", "buckets")
    ACKS_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TARGET_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    acks: int
    table_id: int
    timeout_ms: int
    target_columns: _containers.RepeatedScalarFieldContainer[int]
    buckets: _containers.RepeatedCompositeFieldContainer[PutKvBucketPb]
    def __init__(self, acks: _Optional[int] = ..., table_id: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., target_columns: _Optional[_Iterable[int]] = ..., buckets: _Optional[_Iterable[_Union[PutKvBucketPb, _Mapping]]] = ...) -> None: ...

class PutKvResponse(_message.Message):
    __slots__ = ("buckets", "error")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[ProduceBucketResultPb]
    error: ErrorInfo
    def __init__(self, buckets: _Optional[_Iterable[_Union[ProduceBucketResultPb, _Mapping]]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class LookupBucketPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "keys")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., keys: _Optional[_Iterable[bytes]] = ...) -> None: ...

class LookupRequest(_message.Message):
    __slots__ = ("table_id", "buckets")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    buckets: _containers.RepeatedCompositeFieldContainer[LookupBucketPb]
    def __init__(self, table_id: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[LookupBucketPb, _Mapping]]] = ...) -> None: ...

class LookupBucketResultPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "error", "found", "rows")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    error: ErrorInfo
    found: _containers.RepeatedScalarFieldContainer[bool]
    rows: bytes
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., found: _Optional[_Iterable[bool]] = ..., rows: _Optional[bytes] = ...) -> None: ...

class LookupResponse(_message.Message):
    __slots__ = ("buckets", "error")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[LookupBucketResultPb]
    error: ErrorInfo
    def __init__(self, buckets: _Optional[_Iterable[_Union[LookupBucketResultPb, _Mapping]]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class PrefixLookupBucketPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "prefixes")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    PREFIXES_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    prefixes: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., prefixes: _Optional[_Iterable[bytes]] = ...) -> None: ...

class PrefixLookupRequest(_message.Message):
    __slots__ = ("table_id", "buckets")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    buckets: _containers.RepeatedCompositeFieldContainer[PrefixLookupBucketPb]
    def __init__(self, table_id: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[PrefixLookupBucketPb, _Mapping]]] = ...) -> None: ...

class PrefixLookupBucketResultPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "error", "counts", "rows")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    error: ErrorInfo
    counts: _containers.RepeatedScalarFieldContainer[int]
    rows: bytes
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., counts: _Optional[_Iterable[int]] = ..., rows: _Optional[bytes] = ...) -> None: ...

class PrefixLookupResponse(_message.Message):
    __slots__ = ("buckets", "error")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[PrefixLookupBucketResultPb]
    error: ErrorInfo
    def __init__(self, buckets: _Optional[_Iterable[_Union[PrefixLookupBucketResultPb, _Mapping]]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class ScanKvRequest(_message.Message):
    __slots__ = ("table_id", "partition_id", "bucket_id", "limit")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_id: int
    bucket_id: int
    limit: int
    def __init__(self, table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ScanKvResponse(_message.Message):
    __slots__ = ("error", "rows", "log_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    LOG_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    rows: bytes
    log_offset: int
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., rows: _Optional[bytes] = ..., log_offset: _Optional[int] = ...) -> None: ...

class RemoteLogSegmentPb(_message.Message):
    __slots__ = ("remote_log_segment_id", "remote_log_start_offset", "remote_log_end_offset", "segment_size_in_bytes", "max_timestamp")
    REMOTE_LOG_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_SIZE_IN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    remote_log_segment_id: str
    remote_log_start_offset: int
    remote_log_end_offset: int
    segment_size_in_bytes: int
    max_timestamp: int
    def __init__(self, remote_log_segment_id: _Optional[str] = ..., remote_log_start_offset: _Optional[int] = ..., remote_log_end_offset: _Optional[int] = ..., segment_size_in_bytes: _Optional[int] = ..., max_timestamp: _Optional[int] = ...) -> None: ...

class RemoteLogFetchInfoPb(_message.Message):
    __slots__ = ("remote_log_tablet_dir", "partition_name", "remote_log_segments", "first_start_pos")
    REMOTE_LOG_TABLET_DIR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    FIRST_START_POS_FIELD_NUMBER: _ClassVar[int]
    remote_log_tablet_dir: str
    partition_name: str
    remote_log_segments: _containers.RepeatedCompositeFieldContainer[RemoteLogSegmentPb]
    first_start_pos: int
    def __init__(self, remote_log_tablet_dir: _Optional[str] = ..., partition_name: _Optional[str] = ..., remote_log_segments: _Optional[_Iterable[_Union[RemoteLogSegmentPb, _Mapping]]] = ..., first_start_pos: _Optional[int] = ...) -> None: ...

class RemoteLogManifestPb(_message.Message):
    __slots__ = ("table_id", "partition_id", "bucket_id", "remote_log_manifest_path", "remote_log_start_offset", "remote_log_end_offset", "remote_log_size", "segment_count")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_MANIFEST_PATH_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_SIZE_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_id: int
    bucket_id: int
    remote_log_manifest_path: str
    remote_log_start_offset: int
    remote_log_end_offset: int
    remote_log_size: int
    segment_count: int
    def __init__(self, table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., remote_log_manifest_path: _Optional[str] = ..., remote_log_start_offset: _Optional[int] = ..., remote_log_end_offset: _Optional[int] = ..., remote_log_size: _Optional[int] = ..., segment_count: _Optional[int] = ...) -> None: ...

class CommitRemoteLogManifestRequest(_message.Message):
    __slots__ = ("server_id", "leader_epoch", "manifest", "previous_manifest_path", "server_epoch")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_MANIFEST_PATH_FIELD_NUMBER: _ClassVar[int]
    SERVER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    server_id: int
    leader_epoch: int
    manifest: RemoteLogManifestPb
    previous_manifest_path: str
    server_epoch: int
    def __init__(self, server_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., manifest: _Optional[_Union[RemoteLogManifestPb, _Mapping]] = ..., previous_manifest_path: _Optional[str] = ..., server_epoch: _Optional[int] = ...) -> None: ...

class CommitRemoteLogManifestResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class GetRemoteLogManifestRequest(_message.Message):
    __slots__ = ("table_id", "partition_id", "bucket_id")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    partition_id: int
    bucket_id: int
    def __init__(self, table_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ...) -> None: ...

class GetRemoteLogManifestResponse(_message.Message):
    __slots__ = ("error", "found", "manifest")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    found: bool
    manifest: RemoteLogManifestPb
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., found: bool = ..., manifest: _Optional[_Union[RemoteLogManifestPb, _Mapping]] = ...) -> None: ...

class GetFileSystemSecurityTokenRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetFileSystemSecurityTokenResponse(_message.Message):
    __slots__ = ("error", "schema", "token", "expiration_time", "addition_info")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_TIME_FIELD_NUMBER: _ClassVar[int]
    ADDITION_INFO_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    schema: str
    token: bytes
    expiration_time: int
    addition_info: _containers.RepeatedCompositeFieldContainer[KeyValuePb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., schema: _Optional[str] = ..., token: _Optional[bytes] = ..., expiration_time: _Optional[int] = ..., addition_info: _Optional[_Iterable[_Union[KeyValuePb, _Mapping]]] = ...) -> None: ...

class KeyValuePb(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class DescribeLogRequest(_message.Message):
    __slots__ = ("table_id", "buckets")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table_id: int
    buckets: _containers.RepeatedCompositeFieldContainer[TableStatsBucketPb]
    def __init__(self, table_id: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[TableStatsBucketPb, _Mapping]]] = ...) -> None: ...

class DescribeLogBucketPb(_message.Message):
    __slots__ = ("partition_id", "bucket_id", "error", "local_log_start_offset", "local_log_end_offset", "high_watermark", "local_log_size", "local_segment_count", "remote_log_start_offset", "remote_log_end_offset", "remote_log_size", "remote_segment_count", "kv_size")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKET_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LOCAL_LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOCAL_LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOCAL_LOG_SIZE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_SEGMENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    REMOTE_LOG_SIZE_FIELD_NUMBER: _ClassVar[int]
    REMOTE_SEGMENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    KV_SIZE_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    bucket_id: int
    error: ErrorInfo
    local_log_start_offset: int
    local_log_end_offset: int
    high_watermark: int
    local_log_size: int
    local_segment_count: int
    remote_log_start_offset: int
    remote_log_end_offset: int
    remote_log_size: int
    remote_segment_count: int
    kv_size: int
    def __init__(self, partition_id: _Optional[int] = ..., bucket_id: _Optional[int] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., local_log_start_offset: _Optional[int] = ..., local_log_end_offset: _Optional[int] = ..., high_watermark: _Optional[int] = ..., local_log_size: _Optional[int] = ..., local_segment_count: _Optional[int] = ..., remote_log_start_offset: _Optional[int] = ..., remote_log_end_offset: _Optional[int] = ..., remote_log_size: _Optional[int] = ..., remote_segment_count: _Optional[int] = ..., kv_size: _Optional[int] = ...) -> None: ...

class DescribeLogResponse(_message.Message):
    __slots__ = ("buckets", "error")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[DescribeLogBucketPb]
    error: ErrorInfo
    def __init__(self, buckets: _Optional[_Iterable[_Union[DescribeLogBucketPb, _Mapping]]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class AlterConfigPb(_message.Message):
    __slots__ = ("key", "value", "op_type")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    op_type: int
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., op_type: _Optional[int] = ...) -> None: ...

class AlterClusterConfigsRequest(_message.Message):
    __slots__ = ("configs",)
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    configs: _containers.RepeatedCompositeFieldContainer[AlterConfigPb]
    def __init__(self, configs: _Optional[_Iterable[_Union[AlterConfigPb, _Mapping]]] = ...) -> None: ...

class AlterClusterConfigsResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class DescribeClusterConfigsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConfigEntryPb(_message.Message):
    __slots__ = ("key", "value", "config_source")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    CONFIG_SOURCE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    config_source: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., config_source: _Optional[str] = ...) -> None: ...

class DescribeClusterConfigsResponse(_message.Message):
    __slots__ = ("error", "configs")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    error: ErrorInfo
    configs: _containers.RepeatedCompositeFieldContainer[ConfigEntryPb]
    def __init__(self, error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., configs: _Optional[_Iterable[_Union[ConfigEntryPb, _Mapping]]] = ...) -> None: ...
