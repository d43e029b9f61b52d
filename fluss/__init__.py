"""fluss: a Python implementation of the Apache Fluss architecture, API-compatible with the official Fluss
Python client (``import fluss``): the same classes, methods, arguments and sync/async shapes as its type stub
(``docs/python-api-parity.md`` lists each one and what this client adds)."""

from fluss.acl import (
    AclBinding,
    AclBindingFilter,
    OperationType,
    PermissionType,
    Principal,
    Resource,
    ResourceType,
)
from fluss.client.admin import FlussAdmin
from fluss.client.batch_scanner import BatchScanner
from fluss.client.config import Config
from fluss.client.connection import FlussConnection
from fluss.client.lookup import Lookuper, PrefixLookuper, TableLookup, TablePrefixLookup
from fluss.client.scanner import LogScanner, RecordBatch, ScanRecord, ScanRecords
from fluss.client.table import FlussTable, TableAppend, TableScan
from fluss.client.upsert import TableUpsert, UpsertWriter
from fluss.client.writer import AppendWriter, WriteResultHandle
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import (
    EARLIEST_OFFSET,
    AlterConfig,
    AlterConfigOpType,
    BucketReassignment,
    ConfigEntry,
    DatabaseDescriptor,
    DatabaseInfo,
    GoalType,
    LakeSnapshot,
    OffsetSpec,
    PartitionInfo,
    RebalanceProgress,
    RebalanceResultForBucket,
    RebalanceStatus,
    Schema,
    ServerNode,
    ServerTag,
    TableBucket,
    TableChange,
    TableDescriptor,
    TableInfo,
    TablePath,
    TableStats,
)
from fluss.record.change_type import ChangeType

__version__ = "0.1.0"

__all__ = [
    "EARLIEST_OFFSET", "AppendWriter", "BatchScanner", "ChangeType", "Config", "DatabaseDescriptor", "DatabaseInfo",
    "ErrorCode", "FlussAdmin", "FlussConnection", "FlussError", "FlussTable", "LakeSnapshot", "LogScanner", "Lookuper",
    "OffsetSpec", "PartitionInfo", "PrefixLookuper", "RecordBatch", "ScanRecord", "ScanRecords", "Schema",
    "ServerNode", "TableAppend", "TableBucket", "TableChange", "TableDescriptor", "TableInfo", "TableLookup",
    "TablePath", "TablePrefixLookup", "TableScan", "TableStats", "TableUpsert", "UpsertWriter", "WriteResultHandle",
    "AclBinding", "AclBindingFilter", "OperationType", "PermissionType", "Principal", "Resource", "ResourceType",
    "BucketReassignment", "ServerTag", "AlterConfig", "AlterConfigOpType", "ConfigEntry",
    "GoalType", "RebalanceProgress", "RebalanceResultForBucket", "RebalanceStatus",
]
