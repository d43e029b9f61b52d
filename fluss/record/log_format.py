"""A table's log and KV formats: ``table.log.format`` and ``table.kv.format``, with Fluss's values and rules.

``table.log.format`` is how the records of a log batch body are laid out (``fluss.record.log_batch``):

* ``ARROW`` (default): an Arrow IPC record batch. Columnar: the tablet server projects columns from its buffers,
  and readers get Arrow batches without conversion.
* ``INDEXED``: rows in the indexed layout (fixed slots + variable section, ``fluss.record.indexed_rows``).
* ``COMPACTED``: rows in the compacted layout (variable-length integers, no bytes for nulls,
  ``fluss.record.compacted_rows``), the smallest on disk.

``table.kv.format`` is how a primary-key table's rows are stored in RocksDB: ``COMPACTED`` (default) or
``INDEXED``. Fluss's rule for primary-key tables holds: with the COMPACTED KV format the log format is ARROW or
COMPACTED. Values are case-insensitive. Both keys, their values and that rule are declared in the options registry
(``fluss.table_options``), which checks them at CREATE TABLE; this module reads them and holds the codecs' choice.

Readers that need Arrow say so: column projection and every Arrow batch reader (a record-batch log scanner, a
bucket batch scanner of a log table) refuse a table whose log format is not ARROW, naming the table and its
format, as Fluss does. Record scanners (``poll``), lookups and Flink read every format.
"""

from __future__ import annotations

from collections.abc import Mapping

from fluss.errors import ErrorCode, FlussError
from fluss.table_options import KV_FORMAT as KV_FORMAT_OPTION
from fluss.table_options import LOG_FORMAT as LOG_FORMAT_OPTION

LOG_FORMAT = LOG_FORMAT_OPTION.key
KV_FORMAT = KV_FORMAT_OPTION.key

ARROW = "ARROW"
INDEXED = "INDEXED"
COMPACTED = "COMPACTED"

LOG_FORMATS = LOG_FORMAT_OPTION.values
KV_FORMATS = KV_FORMAT_OPTION.values
DEFAULT_LOG_FORMAT = LOG_FORMAT_OPTION.default
DEFAULT_KV_FORMAT = KV_FORMAT_OPTION.default


def log_format_of(props: Mapping[str, str]) -> str:
    """The table's log format (ARROW, INDEXED or COMPACTED), as the options registry parses it."""
    return LOG_FORMAT_OPTION.value_of(props)


def kv_format_of(props: Mapping[str, str]) -> str:
    """The table's KV format (COMPACTED or INDEXED), as the options registry parses it."""
    return KV_FORMAT_OPTION.value_of(props)


def row_codec_of(fmt: str):
    """The row layout module (``encode_rows[_buffer]`` / ``decode_rows[_buffer]``) of INDEXED or COMPACTED."""
    from fluss.record import compacted_rows, indexed_rows

    codecs = {INDEXED: indexed_rows, COMPACTED: compacted_rows}
    try:
        return codecs[fmt]
    except KeyError:
        raise FlussError(f"{fmt} is not a row format (INDEXED or COMPACTED)", ErrorCode.CLIENT_ERROR) from None


def require_arrow_log_format(info, what: str) -> None:
    """Raise for a table whose log is not ARROW: ``what`` (e.g. "Column projection") needs Arrow batches."""
    fmt = log_format_of(info.get_properties())
    if fmt != ARROW:
        raise FlussError(f"{what} needs the ARROW log format, but table '{info.table_path}' uses {LOG_FORMAT}={fmt} "
                         "(read it with a record scanner: new_scan().create_log_scanner())", ErrorCode.CLIENT_ERROR)


__all__ = [
    "ARROW", "COMPACTED", "DEFAULT_KV_FORMAT", "DEFAULT_LOG_FORMAT", "INDEXED", "KV_FORMAT", "KV_FORMATS",
    "LOG_FORMAT", "LOG_FORMATS", "kv_format_of", "log_format_of", "require_arrow_log_format",
    "row_codec_of",
]  # fmt: skip
