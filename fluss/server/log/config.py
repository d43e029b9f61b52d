"""Configuration of one LogTablet, with the Fluss option keys it is read from.

Server options (``server.yaml``) give the segment and index sizes; the table property ``table.log.ttl`` gives the
retention. ``from_options`` accepts Fluss-style values ("1gb", "4kb", "7d").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fluss.config_values import parse_int, parse_memory_size
from fluss.errors import ErrorCode, FlussError
from fluss.table_options import LOG_TTL

LOG_SEGMENT_FILE_SIZE = "log.segment.file-size"
LOG_INDEX_INTERVAL_SIZE = "log.index.interval-size"
LOG_FLUSH_INTERVAL_MESSAGES = "log.flush.interval-messages"
TABLE_LOG_TTL = LOG_TTL.key

_MAX_SEGMENT_BYTES = (1 << 31) - 1  # index entries store file positions as u32; one batch may overflow a segment


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1 << 30
    index_interval_bytes: int = 4096
    ttl_ms: int = 7 * 24 * 3600 * 1000  # -1 = keep forever
    flush_interval_messages: int | None = None  # fsync after this many unflushed records; None = only on flush()

    def __post_init__(self) -> None:
        if not 0 < self.segment_bytes <= _MAX_SEGMENT_BYTES:
            raise FlussError(
                f"Invalid '{LOG_SEGMENT_FILE_SIZE}' {self.segment_bytes}: must be in 1..{_MAX_SEGMENT_BYTES} bytes",
                ErrorCode.INVALID_CONFIG_EXCEPTION,
            )
        if self.index_interval_bytes < 0:
            raise FlussError(
                f"Invalid '{LOG_INDEX_INTERVAL_SIZE}' {self.index_interval_bytes}: must be >= 0",
                ErrorCode.INVALID_CONFIG_EXCEPTION,
            )
        if self.ttl_ms < -1 or self.ttl_ms == 0:
            raise FlussError(
                f"Invalid '{TABLE_LOG_TTL}' {self.ttl_ms} ms: must be positive, or -1 to keep the log forever",
                ErrorCode.INVALID_CONFIG_EXCEPTION,
            )
        if self.flush_interval_messages is not None and self.flush_interval_messages <= 0:
            raise FlussError(
                f"Invalid '{LOG_FLUSH_INTERVAL_MESSAGES}' {self.flush_interval_messages}: must be positive",
                ErrorCode.INVALID_CONFIG_EXCEPTION,
            )

    @classmethod
    def from_options(
        cls, server_options: Mapping[str, object] | None = None, table_properties: Mapping[str, object] | None = None
    ) -> LogConfig:
        """Build from ``server.yaml`` options and table properties (missing keys keep the defaults)."""
        server = dict(server_options or {})
        table = dict(table_properties or {})
        kwargs: dict[str, object] = {}
        if LOG_SEGMENT_FILE_SIZE in server:
            kwargs["segment_bytes"] = parse_memory_size(server[LOG_SEGMENT_FILE_SIZE], LOG_SEGMENT_FILE_SIZE)
        if LOG_INDEX_INTERVAL_SIZE in server:
            kwargs["index_interval_bytes"] = parse_memory_size(server[LOG_INDEX_INTERVAL_SIZE], LOG_INDEX_INTERVAL_SIZE)
        if LOG_FLUSH_INTERVAL_MESSAGES in server:
            kwargs["flush_interval_messages"] = parse_int(server[LOG_FLUSH_INTERVAL_MESSAGES], LOG_FLUSH_INTERVAL_MESSAGES)
        if TABLE_LOG_TTL in table:
            kwargs["ttl_ms"] = LOG_TTL.value_of(table)
        return cls(**kwargs)  # type: ignore[arg-type]
