"""The gateway's errors: one envelope, stable snake_case codes, one HTTP status per code (FIP-49).

Every error response is ``{"error": {"code", "message", "request_id"}}`` with the ``x-request-id`` header
carrying the same id. ``code`` is a stable name a client can switch on; ``message`` is for people.

Each Fluss :class:`~fluss.errors.ErrorCode` maps to exactly one (HTTP status, code) pair in
:data:`FLUSS_ERROR_MAP`; a test checks that every Fluss error code is in the map, so a new code cannot slip
through as an unclassified 500. Retriable cluster conditions (leader moved, not enough replicas, a server
unreachable) are 503 ``unavailable``: the request did nothing, or - for writes - see ``docs/gateway.md`` on
idempotent retries.
"""

from __future__ import annotations

from dataclasses import dataclass

from fluss.errors import ErrorCode, FlussError, error_name

# Stable error codes: FIP-49's list, plus the few this gateway adds for its reads.
ALREADY_EXISTS = "already_exists"
BACKEND = "backend"
CANCELLED = "cancelled"
CLUSTER_NOT_FOUND = "cluster_not_found"
DATABASE_ALREADY_EXISTS = "database_already_exists"
DATABASE_NOT_EMPTY = "database_not_empty"
DATABASE_NOT_FOUND = "database_not_found"
FAILED_PRECONDITION = "failed_precondition"
INTERNAL = "internal"
INVALID_ARGUMENT = "invalid_argument"
LIMIT_EXCEEDED = "limit_exceeded"
METHOD_NOT_ALLOWED = "method_not_allowed"
NOT_ACCEPTABLE = "not_acceptable"
NOT_FOUND = "not_found"
OFFSET_OUT_OF_RANGE = "offset_out_of_range"
PARTITION_ALREADY_EXISTS = "partition_already_exists"
PARTITION_NOT_FOUND = "partition_not_found"
RESOURCE_EXHAUSTED = "resource_exhausted"
TABLE_ALREADY_EXISTS = "table_already_exists"
TABLE_NOT_FOUND = "table_not_found"
TIMEOUT = "timeout"
UNAUTHENTICATED = "unauthenticated"
UNAUTHORIZED = "unauthorized"
UNAVAILABLE = "unavailable"
UNSUPPORTED = "unsupported"
UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"

#: Every stable code with its one HTTP status.
CODE_STATUS: dict[str, int] = {
    ALREADY_EXISTS: 409,
    BACKEND: 500,
    CANCELLED: 499,
    CLUSTER_NOT_FOUND: 404,
    DATABASE_ALREADY_EXISTS: 409,
    DATABASE_NOT_EMPTY: 409,
    DATABASE_NOT_FOUND: 404,
    FAILED_PRECONDITION: 409,
    INTERNAL: 500,
    INVALID_ARGUMENT: 400,
    LIMIT_EXCEEDED: 413,
    METHOD_NOT_ALLOWED: 405,
    NOT_ACCEPTABLE: 406,
    NOT_FOUND: 404,
    OFFSET_OUT_OF_RANGE: 416,
    PARTITION_ALREADY_EXISTS: 409,
    PARTITION_NOT_FOUND: 404,
    RESOURCE_EXHAUSTED: 429,
    TABLE_ALREADY_EXISTS: 409,
    TABLE_NOT_FOUND: 404,
    TIMEOUT: 504,
    UNAUTHENTICATED: 401,
    UNAUTHORIZED: 403,
    UNAVAILABLE: 503,
    UNSUPPORTED: 501,
    UNSUPPORTED_MEDIA_TYPE: 415,
}

#: Each Fluss error code -> the gateway's stable code (its status is ``CODE_STATUS[code]``).
FLUSS_ERROR_MAP: dict[int, str] = {
    ErrorCode.CLIENT_ERROR: INVALID_ARGUMENT,
    ErrorCode.UNKNOWN_SERVER_ERROR: BACKEND,
    ErrorCode.NETWORK_EXCEPTION: UNAVAILABLE,
    ErrorCode.UNSUPPORTED_VERSION: UNSUPPORTED,
    ErrorCode.CORRUPT_MESSAGE: UNAVAILABLE,
    ErrorCode.DATABASE_NOT_EXIST: DATABASE_NOT_FOUND,
    ErrorCode.DATABASE_NOT_EMPTY: DATABASE_NOT_EMPTY,
    ErrorCode.DATABASE_ALREADY_EXIST: DATABASE_ALREADY_EXISTS,
    ErrorCode.TABLE_NOT_EXIST: TABLE_NOT_FOUND,
    ErrorCode.TABLE_ALREADY_EXIST: TABLE_ALREADY_EXISTS,
    ErrorCode.SCHEMA_NOT_EXIST: NOT_FOUND,
    ErrorCode.LOG_STORAGE_EXCEPTION: BACKEND,
    ErrorCode.KV_STORAGE_EXCEPTION: BACKEND,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: UNAVAILABLE,
    ErrorCode.RECORD_TOO_LARGE_EXCEPTION: LIMIT_EXCEEDED,
    ErrorCode.CORRUPT_RECORD_EXCEPTION: BACKEND,
    ErrorCode.INVALID_TABLE_EXCEPTION: INVALID_ARGUMENT,
    ErrorCode.INVALID_DATABASE_EXCEPTION: INVALID_ARGUMENT,
    ErrorCode.INVALID_REPLICATION_FACTOR: INVALID_ARGUMENT,
    ErrorCode.INVALID_REQUIRED_ACKS: INVALID_ARGUMENT,
    ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION: OFFSET_OUT_OF_RANGE,
    ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION: INVALID_ARGUMENT,
    ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION: UNAVAILABLE,
    ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION: BACKEND,
    ErrorCode.INVALID_COORDINATOR_EXCEPTION: UNAVAILABLE,
    ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION: UNAVAILABLE,
    ErrorCode.REQUEST_TIME_OUT: TIMEOUT,
    ErrorCode.STORAGE_EXCEPTION: BACKEND,
    ErrorCode.OPERATION_NOT_ATTEMPTED_EXCEPTION: UNAVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION: UNAVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_EXCEPTION: UNAVAILABLE,
    ErrorCode.SECURITY_TOKEN_EXCEPTION: UNAUTHENTICATED,
    ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION: BACKEND,
    ErrorCode.DUPLICATE_SEQUENCE_EXCEPTION: BACKEND,
    ErrorCode.UNKNOWN_WRITER_ID_EXCEPTION: BACKEND,
    ErrorCode.INVALID_COLUMN_PROJECTION: INVALID_ARGUMENT,
    ErrorCode.INVALID_TARGET_COLUMN: INVALID_ARGUMENT,
    ErrorCode.PARTITION_NOT_EXISTS: PARTITION_NOT_FOUND,
    ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION: INVALID_ARGUMENT,
    ErrorCode.INVALID_TIMESTAMP_EXCEPTION: INVALID_ARGUMENT,
    ErrorCode.INVALID_CONFIG_EXCEPTION: INVALID_ARGUMENT,
    ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION: FAILED_PRECONDITION,
    ErrorCode.KV_SNAPSHOT_NOT_EXIST: NOT_FOUND,
    ErrorCode.PARTITION_ALREADY_EXISTS: PARTITION_ALREADY_EXISTS,
    ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION: INVALID_ARGUMENT,
    ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION: UNAVAILABLE,
    ErrorCode.PARTITION_MAX_NUM_EXCEPTION: FAILED_PRECONDITION,
    ErrorCode.AUTHENTICATE_EXCEPTION: UNAUTHENTICATED,
    ErrorCode.SECURITY_DISABLED_EXCEPTION: FAILED_PRECONDITION,
    ErrorCode.AUTHORIZATION_EXCEPTION: UNAUTHORIZED,
    ErrorCode.BUCKET_MAX_NUM_EXCEPTION: FAILED_PRECONDITION,
    ErrorCode.FENCED_TIERING_EPOCH_EXCEPTION: FAILED_PRECONDITION,
    ErrorCode.RETRIABLE_AUTHENTICATE_EXCEPTION: UNAVAILABLE,
    ErrorCode.INVALID_SERVER_RACK_INFO_EXCEPTION: BACKEND,
    ErrorCode.LAKE_SNAPSHOT_NOT_EXIST: NOT_FOUND,
    ErrorCode.LAKE_TABLE_ALREADY_EXIST: ALREADY_EXISTS,
    ErrorCode.INELIGIBLE_REPLICA_EXCEPTION: UNAVAILABLE,
    ErrorCode.INVALID_ALTER_TABLE_EXCEPTION: INVALID_ARGUMENT,
    ErrorCode.DELETION_DISABLED_EXCEPTION: FAILED_PRECONDITION,
    ErrorCode.SERVER_NOT_EXIST_EXCEPTION: BACKEND,  # a control request named a server that is not registered
    ErrorCode.SERVER_TAG_ALREADY_EXIST_EXCEPTION: ALREADY_EXISTS,
    ErrorCode.SERVER_TAG_NOT_EXIST_EXCEPTION: NOT_FOUND,
    ErrorCode.REBALANCE_FAILURE_EXCEPTION: FAILED_PRECONDITION,  # another rebalance is running, or it cannot start
    ErrorCode.NO_REBALANCE_IN_PROGRESS_EXCEPTION: NOT_FOUND,
}


@dataclass
class GatewayError(Exception):
    """An error answered with the envelope: a stable ``code`` (its HTTP status follows) and a message."""

    code: str
    message: str
    headers: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if self.code not in CODE_STATUS:
            raise ValueError(f"unknown gateway error code {self.code!r}")
        super().__init__(self.message)

    @property
    def status(self) -> int:
        return CODE_STATUS[self.code]


def invalid(message: str) -> GatewayError:
    return GatewayError(INVALID_ARGUMENT, message)


def from_fluss(err: FlussError) -> GatewayError:
    """The gateway error of a cluster (or client) failure; the message keeps Fluss's error name."""
    code = FLUSS_ERROR_MAP.get(err.error_code, BACKEND)
    return GatewayError(code, f"{error_name(err.error_code)}: {err.message}")


def envelope(code: str, message: str, request_id: str) -> dict:
    return {"error": {"code": code, "message": message, "request_id": request_id}}
