"""fluss: a Python implementation of the Apache Fluss architecture, API-compatible with the official Fluss
Python client (``import fluss``). Everything here is async, like the official client."""

from fluss.client.admin import FlussAdmin
from fluss.client.config import Config
from fluss.client.connection import FlussConnection
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import (
    EARLIEST_OFFSET,
    DatabaseDescriptor,
    DatabaseInfo,
    OffsetSpec,
    PartitionInfo,
    Schema,
    ServerNode,
    TableBucket,
    TableDescriptor,
    TableInfo,
    TablePath,
)
from fluss.record.change_type import ChangeType

__version__ = "0.1.0"

__all__ = [
    "EARLIEST_OFFSET", "ChangeType", "Config", "DatabaseDescriptor", "DatabaseInfo", "ErrorCode", "FlussAdmin",
    "FlussConnection", "FlussError", "OffsetSpec", "PartitionInfo", "Schema", "ServerNode", "TableBucket",
    "TableDescriptor", "TableInfo", "TablePath",
]
