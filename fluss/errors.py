"""Error codes and the one exception type shared by the servers and the client.

Every per-request or per-bucket failure carries a Fluss-style error code (an int, the same numbers as
Apache Fluss's ``Errors`` enum) and a message naming what was wrong. gRPC status codes are used only for
transport failures; the client turns those into ``NETWORK_EXCEPTION``.
"""

from __future__ import annotations


class ErrorCode:
    """Named constants for Fluss API error codes (server errors > 0 or == -1; client errors == -2)."""

    CLIENT_ERROR = -2
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    NETWORK_EXCEPTION = 1
    UNSUPPORTED_VERSION = 2
    CORRUPT_MESSAGE = 3
    DATABASE_NOT_EXIST = 4
    DATABASE_NOT_EMPTY = 5
    DATABASE_ALREADY_EXIST = 6
    TABLE_NOT_EXIST = 7
    TABLE_ALREADY_EXIST = 8
    SCHEMA_NOT_EXIST = 9
    LOG_STORAGE_EXCEPTION = 10
    KV_STORAGE_EXCEPTION = 11
    NOT_LEADER_OR_FOLLOWER = 12
    RECORD_TOO_LARGE_EXCEPTION = 13
    CORRUPT_RECORD_EXCEPTION = 14
    INVALID_TABLE_EXCEPTION = 15
    INVALID_DATABASE_EXCEPTION = 16
    INVALID_REPLICATION_FACTOR = 17
    INVALID_REQUIRED_ACKS = 18
    LOG_OFFSET_OUT_OF_RANGE_EXCEPTION = 19
    NON_PRIMARY_KEY_TABLE_EXCEPTION = 20
    UNKNOWN_TABLE_OR_BUCKET_EXCEPTION = 21
    INVALID_UPDATE_VERSION_EXCEPTION = 22
    INVALID_COORDINATOR_EXCEPTION = 23
    FENCED_LEADER_EPOCH_EXCEPTION = 24
    REQUEST_TIME_OUT = 25
    STORAGE_EXCEPTION = 26
    OPERATION_NOT_ATTEMPTED_EXCEPTION = 27
    NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION = 28
    NOT_ENOUGH_REPLICAS_EXCEPTION = 29
    SECURITY_TOKEN_EXCEPTION = 30
    OUT_OF_ORDER_SEQUENCE_EXCEPTION = 31
    DUPLICATE_SEQUENCE_EXCEPTION = 32
    UNKNOWN_WRITER_ID_EXCEPTION = 33
    INVALID_COLUMN_PROJECTION = 34
    INVALID_TARGET_COLUMN = 35
    PARTITION_NOT_EXISTS = 36
    TABLE_NOT_PARTITIONED_EXCEPTION = 37
    INVALID_TIMESTAMP_EXCEPTION = 38
    INVALID_CONFIG_EXCEPTION = 39
    LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION = 40
    KV_SNAPSHOT_NOT_EXIST = 41
    PARTITION_ALREADY_EXISTS = 42
    PARTITION_SPEC_INVALID_EXCEPTION = 43
    LEADER_NOT_AVAILABLE_EXCEPTION = 44
    PARTITION_MAX_NUM_EXCEPTION = 45
    AUTHENTICATE_EXCEPTION = 46
    SECURITY_DISABLED_EXCEPTION = 47
    AUTHORIZATION_EXCEPTION = 48
    BUCKET_MAX_NUM_EXCEPTION = 49
    FENCED_TIERING_EPOCH_EXCEPTION = 50
    RETRIABLE_AUTHENTICATE_EXCEPTION = 51
    INVALID_SERVER_RACK_INFO_EXCEPTION = 52
    LAKE_SNAPSHOT_NOT_EXIST = 53
    LAKE_TABLE_ALREADY_EXIST = 54
    INELIGIBLE_REPLICA_EXCEPTION = 55
    INVALID_ALTER_TABLE_EXCEPTION = 56
    DELETION_DISABLED_EXCEPTION = 57
    SERVER_NOT_EXIST_EXCEPTION = 58
    SERVER_TAG_ALREADY_EXIST_EXCEPTION = 59  # Fluss spells these two SEVER_TAG_...
    SERVER_TAG_NOT_EXIST_EXCEPTION = 60
    REBALANCE_FAILURE_EXCEPTION = 61
    NO_REBALANCE_IN_PROGRESS_EXCEPTION = 62


RETRIABLE_CODES = frozenset(
    {
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
        ErrorCode.REQUEST_TIME_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION,
        ErrorCode.NOT_ENOUGH_REPLICAS_EXCEPTION,
        ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION,
        ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION,
        ErrorCode.RETRIABLE_AUTHENTICATE_EXCEPTION,
        ErrorCode.STORAGE_EXCEPTION,  # the leader cannot write its disk: its leadership moves (as Kafka's)
        # a batch of a schema id newer than the server knows: an ALTER TABLE ADD is on its way to the server
        ErrorCode.SCHEMA_NOT_EXIST,
    }
)

_NAMES = {v: k for k, v in vars(ErrorCode).items() if isinstance(v, int)}


def error_name(code: int) -> str:
    """The constant name of an error code, e.g. ``TABLE_NOT_EXIST``."""
    return _NAMES.get(code, f"ERROR_{code}")


class FlussError(Exception):
    """A failure reported by the cluster (or the client) with a Fluss error code."""

    def __init__(self, message: str, error_code: int = ErrorCode.CLIENT_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code

    def __str__(self) -> str:
        """As the official client: ``FlussError(code=15): message``, ``FlussError: message`` for a client error."""
        if self.error_code == ErrorCode.CLIENT_ERROR:
            return f"FlussError: {self.message}"
        return f"FlussError(code={self.error_code}): {self.message}"

    @property
    def error_name(self) -> str:
        """The constant name of the error code, e.g. ``TABLE_NOT_EXIST``."""
        return error_name(self.error_code)

    def __repr__(self) -> str:
        return f"FlussError({self.message!r}, error_code={self.error_code})"

    @property
    def is_retriable(self) -> bool:
        return self.error_code in RETRIABLE_CODES
