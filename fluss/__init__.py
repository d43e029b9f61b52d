"""fluss: a Python implementation of the Apache Fluss architecture, API-compatible with the official Fluss
Python client (``import fluss``): the same classes, methods, arguments and sync/async shapes as its type stub
(``docs/python-api-parity.md`` lists each one and what this client adds).

The names below are imported on first use (PEP 562): ``import fluss.server...`` in a server process does not load
the client (its RPC stack, Arrow compute, the lookup and scan paths), which keeps a server's start short.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_EXPORTS: dict[str, str] = {
    "AclBinding": "fluss.acl",
    "AclBindingFilter": "fluss.acl",
    "OperationType": "fluss.acl",
    "PermissionType": "fluss.acl",
    "Principal": "fluss.acl",
    "Resource": "fluss.acl",
    "ResourceType": "fluss.acl",
    "FlussAdmin": "fluss.client.admin",
    "BatchScanner": "fluss.client.batch_scanner",
    "Config": "fluss.client.config",
    "FlussConnection": "fluss.client.connection",
    "Lookuper": "fluss.client.lookup",
    "PrefixLookuper": "fluss.client.lookup",
    "TableLookup": "fluss.client.lookup",
    "TablePrefixLookup": "fluss.client.lookup",
    "LogScanner": "fluss.client.scanner",
    "RecordBatch": "fluss.client.scanner",
    "ScanRecord": "fluss.client.scanner",
    "ScanRecords": "fluss.client.scanner",
    "FlussTable": "fluss.client.table",
    "TableAppend": "fluss.client.table",
    "TableScan": "fluss.client.table",
    "TableUpsert": "fluss.client.upsert",
    "UpsertWriter": "fluss.client.upsert",
    "AppendWriter": "fluss.client.writer",
    "WriteResultHandle": "fluss.client.writer",
    "ErrorCode": "fluss.errors",
    "FlussError": "fluss.errors",
    "EARLIEST_OFFSET": "fluss.metadata",
    "AlterConfig": "fluss.metadata",
    "AlterConfigOpType": "fluss.metadata",
    "BucketReassignment": "fluss.metadata",
    "ConfigEntry": "fluss.metadata",
    "DatabaseDescriptor": "fluss.metadata",
    "DatabaseInfo": "fluss.metadata",
    "GoalType": "fluss.metadata",
    "LakeSnapshot": "fluss.metadata",
    "OffsetSpec": "fluss.metadata",
    "PartitionInfo": "fluss.metadata",
    "RebalanceProgress": "fluss.metadata",
    "RebalanceResultForBucket": "fluss.metadata",
    "RebalanceStatus": "fluss.metadata",
    "Schema": "fluss.metadata",
    "ServerNode": "fluss.metadata",
    "ServerTag": "fluss.metadata",
    "TableBucket": "fluss.metadata",
    "TableChange": "fluss.metadata",
    "TableDescriptor": "fluss.metadata",
    "TableInfo": "fluss.metadata",
    "TablePath": "fluss.metadata",
    "TableStats": "fluss.metadata",
    "ChangeType": "fluss.record.change_type",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fluss' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
