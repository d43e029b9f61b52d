"""The table options: every key a table may carry, declared once (``TABLE_OPTIONS``), and their validation.

These are Fluss's documented storage options (``bucket.*``, ``table.*``, the aggregation merge engine's
``fields.<column>.*``), with Fluss's types and defaults. Each declaration says whether a live table may change it
(``alterable``) and whether this project implements it yet. The coordinator checks every descriptor with
:func:`validate_table_properties` before anything is stored; the tablet servers and the client read typed values
with ``OPTION.value_of(properties)``, so a key, its default and its parsing exist in this module only.

Rules at CREATE TABLE (each failure an ``INVALID_CONFIG_EXCEPTION`` naming the key and the table):

* an unknown ``table.*`` key is refused, naming the closest known key (``table.log.tll`` → ``table.log.ttl``);
* a documented key that is not implemented yet is refused as "not supported yet" rather than stored to do nothing;
* every value is parsed with its type and bounds (``table.log.ttl`` ≥ 0, ZSTD level 1..22, booleans, enums);
* the merge-engine options and ``table.kv.format`` of a log table are refused (they need a primary key);
* Fluss's format rule: a primary-key table with ``table.kv.format`` COMPACTED has ``table.log.format`` ARROW or
  COMPACTED.

Checks that need the schema (the versioned engine's version column, aggregate functions per column) are the merge
engine's own (``fluss.server.kv.merge``), which the coordinator runs on the same properties as the tablet servers.

``CONNECTOR_OPTIONS`` lists the options of the Flink connector and the client that a Flink table may carry in its
``WITH (...)`` (``scan.*``, ``lookup.*``, ``sink.*``, ``client.*``): they are not table properties, the servers never
read them, and their ``implemented`` flag tells whether the Java connector honours them. ``make options`` (``python
-m fluss.options_export``) writes both registries as JSON for the Java connector.
"""

from __future__ import annotations

from collections.abc import Mapping

from fluss.options import Option, OptionRegistry, OptionType, config_error

_S, _I, _L, _B = OptionType.STRING, OptionType.INT, OptionType.LONG, OptionType.BOOLEAN
_DUR, _MEM, _ENUM = OptionType.DURATION, OptionType.MEMORY_SIZE, OptionType.ENUM

LATER = "not planned yet"

# ---------------------------------------------------------------- distribution

BUCKET_NUM = Option("bucket.num", _I, None, "Number of buckets of the table (default: the cluster's "
                    "default.bucket.number). ALTER TABLE may change it on a partitioned table that is not "
                    "lake-enabled: partitions created afterwards get the new count, existing ones keep theirs.",
                    min=1, alterable=True)
BUCKET_KEY = Option("bucket.key", _S, None, "Comma-separated columns whose hash picks the bucket (default: the "
                    "primary key without partition keys; none for a log table: sticky or round-robin).")
REPLICATION_FACTOR = Option("table.replication.factor", _I, None, "Replicas of each bucket (default: the cluster's "
                            "default.replication.factor); at most the number of tablet servers.", min=1)

BUCKET_FUNCTION = Option("table.bucket.function", _ENUM, None, "Function routing rows to buckets, set by the "
                         "coordinator at creation from the cluster's datalake.format and never changed (a user may "
                         "not set it): 'paimon' on a Paimon lake cluster, else 'default' (fluss.key.bucket_function).",
                         values=("default", "paimon"), case_sensitive=True)

# ---------------------------------------------------------------- log

LOG_TTL = Option("table.log.ttl", _DUR, "7d", "How long log segments are kept before retention deletes them; "
                 "'0ms' (or -1) keeps them forever.", min=0, alterable=True, forever=("-1", "0", "0ms", "0s"))
LOG_LOCAL_TTL = Option("table.log.local-ttl", _DUR, None, "How long log segments stay on local disk once copied "
                       "to remote storage (unset: table.log.ttl; '0ms' turns this cleanup off, segments beyond "
                       "table.log.tiered.local-segments still go); at most table.log.ttl when both are positive.",
                       min=0, alterable=True, forever=("-1", "0", "0ms", "0s"))
LOG_TIERED_LOCAL_SEGMENTS = Option("table.log.tiered.local-segments", _I, "2", "Log segments kept locally per "
                                   "bucket once tiered to remote storage.", min=1, alterable=True)
LOG_FORMAT = Option("table.log.format", _ENUM, "ARROW", "Format of the log records: ARROW (columnar batches), "
                    "INDEXED or COMPACTED (rows; see fluss.record.log_format).",
                    values=("ARROW", "INDEXED", "COMPACTED"))
LOG_ARROW_COMPRESSION_TYPE = Option("table.log.arrow.compression.type", _ENUM, "ZSTD", "Compression of the Arrow "
                                    "log batches.", values=("NONE", "LZ4_FRAME", "ZSTD"))
LOG_ARROW_COMPRESSION_ZSTD_LEVEL = Option("table.log.arrow.compression.zstd.level", _I, "3", "ZSTD level of the "
                                          "Arrow log batches.", min=1, max=22)
STATISTICS_COLUMNS = Option("table.statistics.columns", _S, None, "Columns whose min/max/null count are kept per "
                            "log batch ('*' for all).", implemented=False, planned=LATER)

# ---------------------------------------------------------------- kv

KV_FORMAT = Option("table.kv.format", _ENUM, "COMPACTED", "Format of the rows in the KV store of a primary-key "
                   "table (with COMPACTED, the log format is ARROW or COMPACTED).", values=("COMPACTED", "INDEXED"))
KV_FORMAT_VERSION = Option("table.kv.format-version", _I, None, "Version of the KV key encoding (set by the "
                           "coordinator in Fluss).", implemented=False, planned=LATER)
KV_STANDBY_REPLICA_ENABLED = Option("table.kv.standby-replica.enabled", _B, None, "Keep standby KV replicas for "
                                    "fast leader promotion.", alterable=True, implemented=False, planned=LATER)
KV_ROW_TTL = Option("table.kv.row.ttl", _DUR, None, "Best-effort time to live of the rows of a primary-key table.",
                    implemented=False, planned=LATER)
KV_ROW_TTL_CHANGELOG_MODE = Option("table.kv.row.ttl.changelog-mode", _ENUM, "none", "Changelog emitted when row "
                                   "TTL removes a row.", values=("none",), implemented=False, planned=LATER)
KV_ROW_TTL_TIME_COLUMN = Option("table.kv.row.ttl.time-column", _S, None, "Event-time column of the row TTL.",
                                implemented=False, planned=LATER)
MERGE_ENGINE = Option("table.merge-engine", _ENUM, None, "How a primary-key table merges rows of one key (unset: "
                      "keep the last row).", values=("first_row", "versioned", "aggregation"))
MERGE_ENGINE_VERSIONED_VER_COLUMN = Option("table.merge-engine.versioned.ver-column", _S, None, "Version column "
                                           "of the versioned merge engine (INT, BIGINT, TIMESTAMP or "
                                           "TIMESTAMP_LTZ).")
DELETE_BEHAVIOR = Option("table.delete.behavior", _ENUM, "ALLOW", "Deletes on a primary-key table: applied, "
                         "ignored or refused (IGNORE for first_row and versioned).",
                         values=("ALLOW", "IGNORE", "DISABLE"))
CHANGELOG_IMAGE = Option("table.changelog.image", _ENUM, "FULL", "FULL emits -U and +U for an update; WAL emits "
                         "only +U.", values=("FULL", "WAL"))
FIELD_AGG = Option("fields.<column>.agg", _S, "last_value_ignore_nulls", "Aggregate function of a column under the "
                   "aggregation merge engine.")
FIELD_LISTAGG_DELIMITER = Option("fields.<column>.listagg.delimiter", _S, ",", "Delimiter of listagg on a column.")
FIELD_STRING_AGG_DELIMITER = Option("fields.<column>.string_agg.delimiter", _S, ",", "Delimiter of string_agg on a "
                                    "column.")
AUTO_INCREMENT_FIELDS = Option("auto-increment.fields", _S, None, "The auto-increment column of a primary-key "
                               "table.", implemented=False, planned=LATER)
AUTO_INC_BATCH_SIZE = Option("table.auto-inc.batch-size", _L, "100000", "Auto-increment ids fetched at a time.",
                             implemented=False, planned=LATER)

# ---------------------------------------------------------------- partitions

AUTO_PARTITION_ENABLED = Option("table.auto-partition.enabled", _B, "false", "Create and drop time partitions "
                                "automatically.")
AUTO_PARTITION_KEY = Option("table.auto-partition.key", _S, None, "The time partition key when a table has "
                            "several partition keys.")
AUTO_PARTITION_TIME_UNIT = Option("table.auto-partition.time-unit", _ENUM, "DAY", "Granularity of automatic "
                                  "partitions.", values=("HOUR", "DAY", "MONTH", "QUARTER", "YEAR"))
AUTO_PARTITION_TIME_FORMAT = Option("table.auto-partition.time-format", _S, None, "Pattern of automatic partition "
                                    "values, Java DateTimeFormatter letters (e.g. yyyy-MM-dd; default from the time "
                                    "unit).")
AUTO_PARTITION_NUM_PRECREATE = Option("table.auto-partition.num-precreate", _I, "2", "Partitions created ahead, "
                                      "the current one included (0 with several partition keys).", min=0,
                                      alterable=True)
AUTO_PARTITION_NUM_RETENTION = Option("table.auto-partition.num-retention", _I, "7", "Past partitions kept.",
                                      min=0, alterable=True)
AUTO_PARTITION_TIME_ZONE = Option("table.auto-partition.time-zone", _S, None, "Time zone of automatic partitions "
                                  "(default: the coordinator's).")

# ---------------------------------------------------------------- lake

DATALAKE_ENABLED = Option("table.datalake.enabled", _B, "false", "Tier the table into the cluster's data lake.",
                          alterable=True)
DATALAKE_FORMAT = Option("table.datalake.format", _ENUM, None, "Lake format of the table (set from the cluster's "
                         "datalake.format).", values=("paimon", "iceberg", "lance"), supported_values=("paimon",))
DATALAKE_FRESHNESS = Option("table.datalake.freshness", _DUR, "3min", "Target lag of the lake behind the log.",
                            min=1, alterable=True)
DATALAKE_AUTO_COMPACTION = Option("table.datalake.auto-compaction", _B, "false", "Compact the lake table when the "
                                  "tiering service writes it (Paimon's own compaction of the buckets a round "
                                  "wrote).", alterable=True)
DATALAKE_AUTO_EXPIRE_SNAPSHOT = Option("table.datalake.auto-expire-snapshot", _B, "false", "Expire old lake "
                                       "snapshots when the tiering service commits (by the lake table's "
                                       "paimon.snapshot.* retention; never the snapshot Union Read uses).",
                                       alterable=True)
DATALAKE_HISTORICAL_PARTITION_ENABLED = Option("table.datalake.historical-partition.enabled", _B, "false",
                                               "Route lookups of expired partitions to the lake.", alterable=True,
                                               implemented=False, planned=LATER)
PAIMON_TABLE_OPTION = Option("paimon.*", _S, None, "Options of the table's Paimon lake table, prefix stripped "
                             "(e.g. paimon.snapshot.num-retained.min), as in Fluss.")
DATALAKE_PAIMON_OPTION = Option("table.datalake.paimon.*", _S, None, "Paimon catalog options of the table's lake "
                                "(recorded by the coordinator from the cluster's datalake.paimon.*).")

TABLE_OPTIONS = OptionRegistry("table option", [
    BUCKET_NUM, BUCKET_KEY, BUCKET_FUNCTION, REPLICATION_FACTOR,
    LOG_TTL, LOG_LOCAL_TTL, LOG_TIERED_LOCAL_SEGMENTS, LOG_FORMAT, LOG_ARROW_COMPRESSION_TYPE,
    LOG_ARROW_COMPRESSION_ZSTD_LEVEL, STATISTICS_COLUMNS,
    KV_FORMAT, KV_FORMAT_VERSION, KV_STANDBY_REPLICA_ENABLED, KV_ROW_TTL, KV_ROW_TTL_CHANGELOG_MODE,
    KV_ROW_TTL_TIME_COLUMN, MERGE_ENGINE, MERGE_ENGINE_VERSIONED_VER_COLUMN, DELETE_BEHAVIOR, CHANGELOG_IMAGE,
    FIELD_AGG, FIELD_LISTAGG_DELIMITER, FIELD_STRING_AGG_DELIMITER, AUTO_INCREMENT_FIELDS, AUTO_INC_BATCH_SIZE,
    AUTO_PARTITION_ENABLED, AUTO_PARTITION_KEY, AUTO_PARTITION_TIME_UNIT, AUTO_PARTITION_TIME_FORMAT,
    AUTO_PARTITION_NUM_PRECREATE, AUTO_PARTITION_NUM_RETENTION, AUTO_PARTITION_TIME_ZONE,
    DATALAKE_ENABLED, DATALAKE_FORMAT, DATALAKE_FRESHNESS, DATALAKE_AUTO_COMPACTION, DATALAKE_AUTO_EXPIRE_SNAPSHOT,
    DATALAKE_HISTORICAL_PARTITION_ENABLED, DATALAKE_PAIMON_OPTION, PAIMON_TABLE_OPTION,
], prefixes=("table.",))

#: Options that only a primary-key table may set.
PRIMARY_KEY_ONLY = (MERGE_ENGINE, MERGE_ENGINE_VERSIONED_VER_COLUMN, KV_FORMAT)

# ---------------------------------------------------------------- connector and client options (not stored)


def _connector(key: str, kind: OptionType, default: str | None, description: str, implemented: bool = True,
               **kw) -> Option:
    return Option(key, kind, default, description, implemented=implemented, planned="" if implemented else LATER,
                  **kw)


CONNECTOR_OPTIONS = OptionRegistry("connector option", [
    _connector("bootstrap.servers", OptionType.LIST, None, "Coordinator addresses host:port[,host:port]."),
    _connector("default-database", _S, "fluss", "Default database of a Fluss catalog."),
    _connector("database-name", _S, None, "Outside a catalog: the Fluss database of a 'connector'='fluss' table "
               "(default: the Flink database)."),
    _connector("table-name", _S, None, "Outside a catalog: the Fluss table of a 'connector'='fluss' table "
               "(default: the Flink table name)."),
    _connector("scan.startup.mode", _ENUM, "full", "Where a scan starts.",
               values=("full", "earliest", "latest", "timestamp")),
    _connector("scan.startup.timestamp", _S, None, "Start of a 'timestamp' scan: epoch milliseconds or "
               "'yyyy-MM-dd HH:mm:ss'."),
    _connector("scan.partition.discovery.interval", _DUR, "1min", "How often a scan looks for new partitions."),
    _connector("scan.kv.snapshot.lease.id", _S, None, "Lease protecting the KV snapshots a scan reads.", False),
    _connector("scan.kv.snapshot.lease.duration", _DUR, "1d", "Duration of the KV snapshot lease.", False),
    _connector("client.scanner.kv.batch-strategy", _ENUM, "snapshot-merge", "How bounded reads of primary-key "
               "tables are served.", False, values=("snapshot-merge", "server-scan")),
    _connector("client.scanner.log.check-crc", _B, "true", "Check the CRC of fetched log batches.", False),
    _connector("client.scanner.log.max-poll-records", _I, "500", "Records returned by one poll.", False),
    _connector("client.scanner.log.fetch.max-bytes", _MEM, "16mb", "Bytes a fetch may return."),
    _connector("client.scanner.log.fetch.max-bytes-for-bucket", _MEM, "1mb", "Bytes a fetch may return per "
               "bucket.", False),
    _connector("client.scanner.log.fetch.min-bytes", _MEM, "1b", "Bytes a fetch waits for.", False),
    _connector("client.scanner.log.fetch.wait-max-time", _DUR, "500ms", "How long a fetch waits for min-bytes."),
    _connector("client.scanner.log.fetch.wait-max-time-ms", _I, "500", "Deprecated spelling of "
               "client.scanner.log.fetch.wait-max-time, in milliseconds."),
    _connector("client.scanner.io.tmpdir", _S, None, "Local directory for downloaded remote log segments (default: "
               "<JVM temp dir>/fluss)."),
    _connector("client.scanner.remote-log.prefetch-num", _I, "4", "Remote log segments downloaded ahead of the "
               "reader, at most."),
    _connector("client.remote-file.download-thread-num", _I, "3", "Threads downloading remote log segments."),
    _connector("lookup.async", _B, "true", "Lookup joins run asynchronously."),
    _connector("lookup.insert-if-not-exists", _B, "false", "Insert the key of a lookup that finds nothing.", False),
    _connector("lookup.cache", _ENUM, "NONE", "Lookup cache strategy.", values=("NONE", "PARTIAL")),
    _connector("lookup.max-retries", _I, "3", "Retries of a failed lookup."),
    _connector("lookup.partial-cache.expire-after-access", _DUR, None, "Cache entries expire after this idle time."),
    _connector("lookup.partial-cache.expire-after-write", _DUR, None, "Cache entries expire after this age."),
    _connector("lookup.partial-cache.cache-missing-key", _B, "true", "Cache lookups that found nothing."),
    _connector("lookup.partial-cache.max-rows", _L, None, "Rows the lookup cache holds."),
    _connector("client.lookup.queue-size", _I, "25600", "Pending lookups.", False),
    _connector("client.lookup.max-batch-size", _I, "128", "Keys per lookup request.", False),
    _connector("client.lookup.max-inflight-requests", _I, "128", "Lookup requests in flight.", False),
    _connector("client.lookup.batch-timeout", _DUR, "100ms", "How long lookups wait to fill a batch.", False),
    _connector("client.lookup.max-retries", _I, "2147483647", "Retries of a lookup request.", False),
    _connector("sink.ignore-delete", _B, "false", "Drop DELETE and UPDATE_BEFORE rows instead of applying them."),
    _connector("sink.bucket-shuffle", _B, "true", "Shuffle rows by bucket before the sink (deprecated).", False),
    _connector("sink.distribution-mode", _ENUM, "AUTO", "How rows are distributed to the sink tasks.", False,
               values=("AUTO", "NONE", "BUCKET", "PARTITION_DYNAMIC")),
    _connector("sink.buffer-flush.max-rows", _I, "16384", "Rows per Arrow batch per bucket before the sink sends "
               "it."),
    _connector("client.writer.compression.min-batch-size", _MEM, "16kb", "A batch whose Arrow buffers hold fewer "
               "bytes is sent uncompressed, whatever the table's codec (0: every batch compressed)."),
    _connector("client.writer.buffer.memory-size", _MEM, "64mb", "Memory for rows waiting to be sent.", False),
    _connector("client.writer.buffer.page-size", _MEM, "128kb", "Page size of the writer buffer.", False),
    _connector("client.writer.buffer.per-request-memory-size", _MEM, "16mb", "Memory allocated per request.", False),
    _connector("client.writer.batch-size", _MEM, "2mb", "Bytes per batch per bucket.", False),
    _connector("client.writer.dynamic-batch-size.enabled", _B, "true", "Adapt the batch size to the throughput.",
               False),
    _connector("client.writer.buffer.wait-timeout", _DUR, None, "How long a writer blocks on a full buffer.", False),
    _connector("client.writer.batch-timeout", _DUR, "100ms", "How long a batch waits to fill.", False),
    _connector("client.writer.bucket.no-key-assigner", _ENUM, "STICKY", "Bucket choice for tables without a bucket "
               "key.", values=("STICKY", "ROUND_ROBIN")),
    _connector("client.writer.acks", _S, "all", "Acknowledgements a write waits for: 0, 1 or all."),
    _connector("client.writer.request-max-size", _MEM, "10mb", "Bytes per write request.", False),
    _connector("client.writer.retries", _I, "2147483647", "Retries of a write that failed with a transient error."),
    _connector("client.writer.enable-idempotence", _B, "true", "Writer ids and batch sequences make retries "
               "exactly-once."),
    _connector("client.writer.max-inflight-requests-per-bucket", _I, "5", "Unacknowledged requests per bucket.",
               False),
    _connector("client.writer.dynamic-create-partition.enabled", _B, "true", "Writers create missing partitions."),
    _connector("client.id", _S, "", "Name of the client in server-side request logs.", False),
    _connector("client.connect-timeout", _DUR, "5s", "How long to keep trying bootstrap servers none of which has "
               "answered yet (the catalog checks the cluster when it opens)."),
    _connector("client.request-timeout", _DUR, "30s", "Time a request, with its retries, may take.", False),
    _connector("client.metrics.enabled", _B, "false", "Collect client metrics.", False),
    _connector("client.security.protocol", _S, "PLAINTEXT", "PLAINTEXT or SASL."),
    _connector("client.security.sasl.mechanism", _S, "PLAIN", "The SASL mechanism (PLAIN)."),
    _connector("client.security.sasl.username", _S, None, "SASL/PLAIN username."),
    _connector("client.security.sasl.password", _S, None, "SASL/PLAIN password."),
    _connector("client.security.sasl.jaas.config", _S, None, "JAAS form of the credentials: "
               "'...PlainLoginModule required username=\"..\" password=\"..\";'."),
    _connector("client.security.ssl.enabled", _B, "false", "Connect over TLS (a listener of the servers' "
               "security.ssl.listeners)."),
    _connector("client.security.ssl.truststore.path", _S, None, "PEM CA certificates to trust (default: the "
               "system's / JVM's)."),
    _connector("client.security.ssl.certificate.path", _S, None, "PEM client certificate chain (mutual TLS)."),
    _connector("client.security.ssl.key.path", _S, None, "PEM (PKCS#8) private key of the client certificate."),
], prefixes=("scan.", "lookup.", "sink.", "client."))

def local_log_ttl_ms(properties: Mapping[str, str], where: str = "") -> int:
    """The effective ``table.log.local-ttl`` in ms: its own value, else ``table.log.ttl``'s; -1 when TTL-based
    cleanup of copied local segments is off."""
    if properties.get(LOG_LOCAL_TTL.key) is None:
        return LOG_TTL.value_of(properties, where)
    return LOG_LOCAL_TTL.value_of(properties, where)


def check_log_ttls(properties: Mapping[str, str], where: str) -> None:
    """``table.log.local-ttl`` may not keep local copies longer than ``table.log.ttl`` keeps the log (both
    positive), as Fluss checks."""
    if properties.get(LOG_LOCAL_TTL.key) is None:
        return
    ttl, local = LOG_TTL.value_of(properties, where), LOG_LOCAL_TTL.value_of(properties, where)
    if ttl > 0 and local > ttl:
        raise config_error(f"'{LOG_LOCAL_TTL.key}' ({properties[LOG_LOCAL_TTL.key]}) of {where} is longer than "
                           f"'{LOG_TTL.key}' ({properties.get(LOG_TTL.key, LOG_TTL.default)}): local copies of the "
                           "log cannot outlive the log")


def validate_table_properties(properties: Mapping[str, str], table: str, has_primary_key: bool) -> dict[str, object]:
    """Checks every table option of ``properties`` (see the module docstring); returns their typed values.

    Keys outside the registry's namespace (client options a Flink table keeps, custom keys) are left alone.
    """
    where = f"table '{table}'"
    values = TABLE_OPTIONS.parse_all(properties, where)
    check_log_ttls(properties, where)
    if not has_primary_key:
        for option in PRIMARY_KEY_ONLY:
            if option.key in properties:
                raise config_error(f"Table option '{option.key}' of {where} needs a primary-key table: "
                                   "a log table has no merge engine and no KV store")
    log_format, kv_format = LOG_FORMAT.value_of(properties), KV_FORMAT.value_of(properties)
    if has_primary_key and kv_format == "COMPACTED" and log_format not in ("ARROW", "COMPACTED"):
        raise config_error(f"Primary-key {where} with '{KV_FORMAT.key}' COMPACTED needs '{LOG_FORMAT.key}' ARROW "
                           f"or COMPACTED, not {log_format} (as in Fluss)")
    return values
