"""Lake option keys and the resolution of the Paimon warehouse.

Server options (``server.yaml``): ``datalake.format`` (only ``paimon``) and ``datalake.paimon.warehouse``
(a local directory or any fsspec URL). When the format is set but the warehouse is not, the warehouse is
``<remote.data.dir>/lake`` if ``remote.data.dir`` is set, else ``<data.dir>/lake`` (coordinator) - set it
explicitly on a real cluster so the coordinator, the tiering job and readers agree.

Table options: ``table.datalake.enabled`` [false] and ``table.datalake.freshness`` [3min], the target lag of
the lake behind the log (the tiering job tiers a table at most once per freshness interval).

Other ``datalake.paimon.*`` server keys are passed to the Paimon catalog with the prefix stripped. A warehouse on
object storage (``s3://``) takes the cluster's ``s3.*`` options (``s3.endpoint``, ``s3.access-key``,
``s3.secret-key``, ``s3.region``, ``s3.path.style.access``; keys Paimon reads too) unless ``datalake.paimon.s3.*``
set them. When a lake table is created the coordinator records the catalog options (as
``table.datalake.paimon.*``) in the table's properties, so clients and the tiering job find the lake from the
table alone.

Every table created on a cluster with a ``datalake.format`` (lake-enabled or not, as in Fluss) records
``table.datalake.format`` and the bucket function of that format (``table.bucket.function``, see
``fluss.key.bucket_function``), fixed for the table's life: :func:`system_table_properties`.

Lake maintenance (table options, run by the tiering job after a lake commit, ``docs/lakehouse.md``):
``table.datalake.auto-compaction`` [false] compacts the buckets a round wrote with Paimon's own compaction;
``table.datalake.auto-expire-snapshot`` [false] expires old Paimon snapshots by the lake table's retention
options (``paimon.snapshot.num-retained.min`` ...), never the snapshot the coordinator's lake snapshot names.
"""

from __future__ import annotations

from collections.abc import Mapping

from fluss import table_options
from fluss.errors import ErrorCode, FlussError
from fluss.key.bucket_function import TABLE_BUCKET_FUNCTION, bucketing_for_lake_format
from fluss.metadata import TableInfo

DATALAKE_FORMAT = "datalake.format"
DATALAKE_PAIMON_PREFIX = "datalake.paimon."
DATALAKE_PAIMON_WAREHOUSE = "datalake.paimon.warehouse"
REMOTE_DATA_DIR = "remote.data.dir"
DATA_DIR = "data.dir"

TABLE_DATALAKE_ENABLED = table_options.DATALAKE_ENABLED.key
TABLE_DATALAKE_FRESHNESS = table_options.DATALAKE_FRESHNESS.key
TABLE_DATALAKE_FORMAT = table_options.DATALAKE_FORMAT.key
TABLE_DATALAKE_AUTO_COMPACTION = table_options.DATALAKE_AUTO_COMPACTION.key
TABLE_DATALAKE_AUTO_EXPIRE_SNAPSHOT = table_options.DATALAKE_AUTO_EXPIRE_SNAPSHOT.key
#: Table properties with this prefix are Paimon options of the lake table (prefix stripped), as in Fluss.
TABLE_PAIMON_OPTION_PREFIX = table_options.PAIMON_TABLE_OPTION.key.removesuffix("*")
#: The coordinator copies the cluster's Paimon catalog options into a lake table's properties under this prefix.
TABLE_LAKE_PREFIX = "table.datalake.paimon."
DEFAULT_FRESHNESS = table_options.DATALAKE_FRESHNESS.default

PAIMON = "paimon"

_UNITS_MS = {"ms": 1, "s": 1000, "sec": 1000, "min": 60_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def is_lake_enabled(info: TableInfo) -> bool:
    """True when the table has ``table.datalake.enabled = true``."""
    return bool(table_options.DATALAKE_ENABLED.value_of(info.get_properties()))


def auto_compaction(info: TableInfo) -> bool:
    """``table.datalake.auto-compaction``: the tiering job compacts what it wrote."""
    return bool(table_options.DATALAKE_AUTO_COMPACTION.value_of(info.get_properties(), f"table '{info.table_path}'"))


def auto_expire_snapshot(info: TableInfo) -> bool:
    """``table.datalake.auto-expire-snapshot``: the tiering job expires old lake snapshots after its commits."""
    return bool(table_options.DATALAKE_AUTO_EXPIRE_SNAPSHOT.value_of(info.get_properties(),
                                                                      f"table '{info.table_path}'"))


def system_table_properties(server_options: Mapping[str, str], requested: Mapping[str, str],
                            table: str) -> dict[str, str]:
    """The properties the coordinator records on every new table: ``table.bucket.function`` (from the cluster's
    ``datalake.format``) and, on a lake cluster, ``table.datalake.format``. ``requested`` are the user's
    properties: the bucket function is the server's to set, and a requested format must be the cluster's."""
    fmt = lake_format(server_options)
    if TABLE_BUCKET_FUNCTION in requested:
        raise FlussError(f"Table option '{TABLE_BUCKET_FUNCTION}' of table '{table}' is set by the server (it "
                         f"follows the cluster's '{DATALAKE_FORMAT}') and cannot be given",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    asked = requested.get(TABLE_DATALAKE_FORMAT)
    if asked is not None and asked.strip().lower() != (fmt or ""):
        raise FlussError(f"Table option '{TABLE_DATALAKE_FORMAT}' = {asked!r} of table '{table}' does not match the "
                         f"cluster's '{DATALAKE_FORMAT}' ({fmt or 'not set'})", ErrorCode.INVALID_CONFIG_EXCEPTION)
    props = {TABLE_BUCKET_FUNCTION: bucketing_for_lake_format(fmt).name}
    if fmt:
        props[TABLE_DATALAKE_FORMAT] = fmt
    return props


def parse_duration_ms(text: str) -> int:
    """``500ms``, ``5s``, ``3min``, ``1h``, ``2d`` or a bare number of milliseconds (the tiering job's
    ``--interval``; table options are parsed by the registry, ``fluss.table_options``)."""
    raw = text.strip().lower().replace(" ", "")
    digits = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(digits):] or "ms"
    if not digits or unit not in _UNITS_MS:
        raise FlussError(f"invalid duration '{text}'", ErrorCode.INVALID_CONFIG_EXCEPTION)
    return int(float(digits) * _UNITS_MS[unit])


def freshness_ms(info: TableInfo) -> int:
    """The table's ``table.datalake.freshness`` in milliseconds."""
    return table_options.DATALAKE_FRESHNESS.value_of(info.get_properties())


def lake_format(server_options: Mapping[str, str]) -> str | None:
    fmt = server_options.get(DATALAKE_FORMAT)
    return fmt.strip().lower() if fmt else None


def warehouse_of(server_options: Mapping[str, str]) -> str:
    """The Paimon warehouse for these server options (see the module docstring for the defaults)."""
    explicit = server_options.get(DATALAKE_PAIMON_WAREHOUSE)
    if explicit:
        return str(explicit)
    base = server_options.get(REMOTE_DATA_DIR) or server_options.get(DATA_DIR)
    if not base:
        raise FlussError(f"'{DATALAKE_PAIMON_WAREHOUSE}' is not set and neither is '{REMOTE_DATA_DIR}'",
                         ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION)
    return str(base).rstrip("/") + "/lake"


def paimon_catalog_options(server_options: Mapping[str, str]) -> dict[str, str]:
    """The pypaimon filesystem-catalog options: every ``datalake.paimon.*`` key without the prefix."""
    opts = {k[len(DATALAKE_PAIMON_PREFIX):]: str(v) for k, v in server_options.items()
            if k.startswith(DATALAKE_PAIMON_PREFIX)}
    opts["warehouse"] = _strip_file_scheme(warehouse_of(server_options))
    opts.setdefault("metastore", "filesystem")
    if opts["warehouse"].startswith(("s3://", "s3a://")):
        for key, value in server_options.items():
            if key.startswith("s3."):
                opts.setdefault(key, str(value))
    return opts


def _strip_file_scheme(url: str) -> str:
    return url[len("file://"):] if url.startswith("file://") else url


def table_lake_properties(server_options: Mapping[str, str]) -> dict[str, str]:
    """The properties a lake-enabled table records: ``table.datalake.format`` and every ``datalake.paimon.*``
    catalog option as ``table.datalake.paimon.*``."""
    props = {TABLE_DATALAKE_FORMAT: PAIMON}
    for key, value in paimon_catalog_options(server_options).items():
        props[TABLE_LAKE_PREFIX + key] = value
    return props
