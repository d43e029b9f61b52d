"""fluss: a Python implementation of the Apache Fluss architecture, API-compatible with the official Fluss
Python client (``import fluss``). Everything here is async, like the official client."""

from fluss.client.admin import FlussAdmin
from fluss.client.config import Config
from fluss.client.connection import FlussConnection
from fluss.client.lookup import Lookuper, PrefixLookuper, TableLookup
from fluss.client.scanner import LogScanner, RecordBatch, ScanRecord, ScanRecords
from fluss.client.table import FlussTable, TableAppend, TableScan
from fluss.client.upsert import TableUpsert, UpsertWriter
from fluss.client.writer import AppendWriter, WriteResultHandle
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import (
    EARLIEST_OFFSET,
    DatabaseDescriptor,
    DatabaseInfo,
    LakeSnapshot,
    OffsetSpec,
    PartitionInfo,
    Schema,
    ServerNode,
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
    "EARLIEST_OFFSET", "AppendWriter", "ChangeType", "Config", "DatabaseDescriptor", "DatabaseInfo", "ErrorCode",
    "FlussAdmin", "FlussConnection", "FlussError", "FlussTable", "LakeSnapshot", "LogScanner", "Lookuper", "OffsetSpec",
    "PartitionInfo", "PrefixLookuper", "RecordBatch", "ScanRecord", "ScanRecords", "Schema", "ServerNode",
    "TableAppend", "TableBucket", "TableChange", "TableDescriptor", "TableInfo", "TableLookup", "TablePath", "TableScan", "TableStats",
    "TableUpsert", "UpsertWriter", "WriteResultHandle",
]
