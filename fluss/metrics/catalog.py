"""Every metric this project exports, declared once: scope, name, type, labels and meaning.

Names follow Apache Fluss (``website/docs/maintenance/observability/monitor-metrics.md``): a metric's Prometheus
name is ``fluss_`` + its scope + ``_`` + its name, e.g. ``fluss_tabletserver_table_messagesInPerSecond``; Fluss's
key-value scope variables (``database``, ``table``, ``bucket``, ``request``) are labels, and every series of a
process also carries the process's labels (``server_id`` and ``host`` on servers, ``client_id`` on clients).
``docs/metrics.md`` is generated from this list (``python -m fluss.metrics.docs``; a test checks it is current).

Types map to Prometheus as follows: a Gauge is a gauge; a Counter is a counter (``<name>_total``); a Meter is a
gauge with its rate per second under the Fluss name (``...PerSecond``) plus the counter behind it
(``<name without PerSecond>_total``, for ``rate()``/``increase()``); a Histogram is a Prometheus histogram
(``_bucket``/``_sum``/``_count``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    COUNTER = "Counter"
    METER = "Meter"
    GAUGE = "Gauge"
    HISTOGRAM = "Histogram"


@dataclass(frozen=True, eq=False)  # each spec is one module-level object: identity is equality (a cheap hash)
class MetricSpec:
    scope: str
    name: str
    kind: Kind
    description: str
    labels: tuple[str, ...] = ()

    @property
    def full_name(self) -> str:
        return f"fluss_{self.scope}_{self.name}"

    @property
    def counter_name(self) -> str:
        """A meter's counter family (``messagesInPerSecond`` -> ``fluss_..._messagesIn``, exposed with ``_total``)."""
        base = self.name.removesuffix("PerSecond")
        return f"fluss_{self.scope}_{base}"


_G, _C, _M, _H = Kind.GAUGE, Kind.COUNTER, Kind.METER, Kind.HISTOGRAM
TABLE = ("database", "table")
BUCKET = ("database", "table", "partition", "bucket")
REQUEST = ("request",)

ALL: list[MetricSpec] = []


def _spec(scope: str, name: str, kind: Kind, description: str, labels: tuple[str, ...] = ()) -> MetricSpec:
    spec = MetricSpec(scope, name, kind, description, labels)
    ALL.append(spec)
    return spec


# ---------------------------------------------------------------- coordinator
CS = "coordinator"
ACTIVE_COORDINATOR_COUNT = _spec(CS, "activeCoordinatorCount", _G,
                                 "1 on the active coordinator, 0 on a standby (sum over coordinators: active ones).")
ACTIVE_TABLET_SERVER_COUNT = _spec(CS, "activeTabletServerCount", _G, "Tablet servers registered in ZooKeeper.")
OFFLINE_BUCKET_COUNT = _spec(CS, "offlineBucketCount", _G,
                             "Buckets without a live leader (no in-sync replica is alive).")
TABLE_COUNT = _spec(CS, "tableCount", _G, "Tables in the cluster.")
LAKE_TABLE_COUNT = _spec(CS, "lakeTableCount", _G, "Tables with table.datalake.enabled.")
BUCKET_COUNT = _spec(CS, "bucketCount", _G, "Buckets in the cluster (every partition's).")
PARTITION_COUNT = _spec(CS, "partitionCount", _G, "Partitions in the cluster.")
EVENT_QUEUE_TIME = _spec(CS, "eventQueueTimeMs", _H, "Time an event waited in the coordinator's event queue (ms).")
EVENT_QUEUE_SIZE = _spec(f"{CS}_event", "eventQueueSize", _G, "Events waiting in the coordinator's event queue.",
                         ("event_type",))
EVENT_PROCESSING_TIME = _spec(f"{CS}_event", "eventProcessingTimeMs", _H,
                              "Time the event processor took to handle an event (ms).", ("event_type",))
LAKE_FRESHNESS = _spec(f"{CS}_lakeTiering_table", "freshness", _G,
                       "Milliseconds since the table's latest lake snapshot was committed (-1: never tiered).", TABLE)
LAKE_SNAPSHOT_ID = _spec(f"{CS}_lakeTiering_table", "snapshotId", _G,
                         "Id of the table's latest lake snapshot (-1: never tiered).", TABLE)

# ---------------------------------------------------------------- tablet server
TS = "tabletserver"
MESSAGES_IN = _spec(TS, "messagesInPerSecond", _M, "Records written to this server (ProduceLog and PutKv).")
BYTES_IN = _spec(TS, "bytesInPerSecond", _M, "Bytes of record batches written to this server.")
BYTES_OUT = _spec(TS, "bytesOutPerSecond", _M, "Bytes of record batches read from this server by clients.")
REPLICATION_BYTES_IN = _spec(TS, "replicationBytesInPerSecond", _M, "Bytes this server's followers fetched.")
REPLICATION_BYTES_OUT = _spec(TS, "replicationBytesOutPerSecond", _M, "Bytes followers fetched from this server.")
LEADER_COUNT = _spec(TS, "leaderCount", _G, "Buckets this server leads.")
REPLICA_COUNT = _spec(TS, "replicaCount", _G, "Bucket replicas on this server (leaders and followers).")
WRITER_ID_COUNT = _spec(TS, "writerIdCount", _G, "Idempotent writer ids with state in this server's logs.")
DELAYED_WRITE_COUNT = _spec(TS, "delayedWriteCount", _G, "acks=all writes waiting for the high watermark.")
DELAYED_FETCH_COUNT = _spec(TS, "delayedFetchCount", _G, "Fetches long-polling for data.")
UNDER_REPLICATED = _spec(TS, "underReplicated", _G, "Led buckets whose ISR is smaller than their replica set.")
UNDER_MIN_ISR = _spec(TS, "underMinIsr", _G,
                      "Led buckets whose ISR is below log.replica.min-in-sync-replicas-number (acks=all fails).")
AT_MIN_ISR = _spec(TS, "atMinIsr", _G, "Led buckets whose ISR is exactly the minimum.")
ISR_EXPANDS = _spec(TS, "isrExpandsPerSecond", _M, "Followers added to an ISR of a bucket this server leads.")
ISR_SHRINKS = _spec(TS, "isrShrinksPerSecond", _M, "Followers removed from an ISR of a bucket this server leads.")
FAILED_ISR_UPDATES = _spec(TS, "failedIsrUpdatesPerSecond", _M, "ISR changes the coordinator did not accept.")
LOG_FLUSH = _spec(TS, "logFlushPerSecond", _M, "Log flushes (fsync of segments and checkpoint).")
LOG_FLUSH_LATENCY = _spec(TS, "logFlushLatencyMs", _H, "Duration of a log flush (ms).")
KV_FLUSH = _spec(TS, "kvFlushPerSecond", _M, "Pre-write buffer flushes to RocksDB (the high watermark moved).")
KV_FLUSH_LATENCY = _spec(TS, "kvFlushLatencyMs", _H, "Duration of a pre-write buffer flush to RocksDB (ms).")
KV_SNAPSHOT_DURATION = _spec(TS, "kvSnapshotDurationMs", _H,
                             "Duration of a KV snapshot: checkpoint, upload, manifest (ms).")
KV_SNAPSHOT_SIZE = _spec(TS, "kvSnapshotSize", _H, "Total size of a KV snapshot's files (bytes).")
BUCKET_METRICS_OMITTED = _spec(TS, "bucketMetricsOmitted", _G,
                               "Replicas left out of the bucket-level series (metrics.bucket-level.max-buckets).")
LOG_SIZE = _spec(f"{TS}_logicalStorage", "logSize", _G, "Bytes of the logs of every replica on this server.")
KV_SIZE = _spec(f"{TS}_logicalStorage", "kvSize", _G, "Bytes of the RocksDB files of every KV tablet on this server.")
LOCAL_SIZE = _spec(f"{TS}_physicalStorage", "localSize", _G, "Bytes on local disk: logs and KV tablets.")
REMOTE_LOG_SIZE = _spec(f"{TS}_physicalStorage", "remoteLogSize", _G,
                        "Bytes in remote storage of the tiered logs of the buckets this server leads.")

# per table (database, table) on a tablet server
TT = f"{TS}_table"
T_MESSAGES_IN = _spec(TT, "messagesInPerSecond", _M, "Records written to the table on this server.", TABLE)
T_BYTES_IN = _spec(TT, "bytesInPerSecond", _M, "Bytes written to the table on this server.", TABLE)
T_BYTES_OUT = _spec(TT, "bytesOutPerSecond", _M, "Bytes clients read from the table on this server.", TABLE)
T_PRODUCE = _spec(TT, "totalProduceLogRequestsPerSecond", _M, "ProduceLog bucket writes to the table.", TABLE)
T_PRODUCE_FAILED = _spec(TT, "failedProduceLogRequestsPerSecond", _M, "ProduceLog bucket writes that failed.", TABLE)
T_PUT_KV = _spec(TT, "totalPutKvRequestsPerSecond", _M, "PutKv bucket writes to the table.", TABLE)
T_PUT_KV_FAILED = _spec(TT, "failedPutKvRequestsPerSecond", _M, "PutKv bucket writes that failed.", TABLE)
T_FETCH = _spec(TT, "totalFetchLogRequestsPerSecond", _M, "Bucket fetches of the table (clients and followers).",
                TABLE)
T_FETCH_FAILED = _spec(TT, "failedFetchLogRequestsPerSecond", _M, "Bucket fetches that failed.", TABLE)
T_LOOKUP = _spec(TT, "totalLookupRequestsPerSecond", _M, "Lookup bucket requests to the table.", TABLE)
T_LOOKUP_FAILED = _spec(TT, "failedLookupRequestsPerSecond", _M, "Lookup bucket requests that failed.", TABLE)
T_PREFIX_LOOKUP = _spec(TT, "totalPrefixLookupRequestsPerSecond", _M, "PrefixLookup bucket requests.", TABLE)
T_PREFIX_LOOKUP_FAILED = _spec(TT, "failedPrefixLookupRequestsPerSecond", _M, "PrefixLookup bucket requests that "
                               "failed.", TABLE)
T_LIMIT_SCAN = _spec(TT, "totalLimitScanRequestsPerSecond", _M, "ScanKv requests (snapshot and limit scans).", TABLE)
T_LIMIT_SCAN_FAILED = _spec(TT, "failedLimitScanRequestsPerSecond", _M, "ScanKv requests that failed.", TABLE)
T_REMOTE_KV_COPY_BYTES = _spec(TT, "remoteKvCopyBytesPerSecond", _M, "Bytes of KV snapshot files uploaded.", TABLE)
T_REMOTE_LOG_COPY_BYTES = _spec(TT, "remoteLogCopyBytesPerSecond", _M, "Bytes of log segments copied to remote "
                                "storage (tiered log).", TABLE)
T_REMOTE_LOG_COPY_REQUESTS = _spec(TT, "remoteLogCopyRequestsPerSecond", _M, "Log segments copied to remote storage.",
                                   TABLE)
T_REMOTE_LOG_COPY_ERRORS = _spec(TT, "remoteLogCopyErrorPerSecond", _M, "Log segment copies to remote storage that "
                                 "failed.", TABLE)
T_REMOTE_LOG_DELETE_REQUESTS = _spec(TT, "remoteLogDeleteRequestsPerSecond", _M, "Remote log segments deleted after "
                                     "table.log.ttl.", TABLE)
T_REMOTE_LOG_DELETE_ERRORS = _spec(TT, "remoteLogDeleteErrorPerSecond", _M, "Deletions of expired remote log segments "
                                   "that failed.", TABLE)

# per bucket (database, table, partition, bucket) on a tablet server; bounded by metrics.bucket-level.max-buckets
B_LOG = f"{TS}_table_bucket_log"
B_NUM_SEGMENTS = _spec(B_LOG, "numSegments", _G, "Local log segments of the replica.", BUCKET)
B_START_OFFSET = _spec(B_LOG, "startOffset", _G, "Log start offset of the replica.", BUCKET)
B_END_OFFSET = _spec(B_LOG, "endOffset", _G, "Log end offset (LEO) of the replica.", BUCKET)
B_LOG_SIZE = _spec(f"{TS}_table_bucket_logicalStorage", "logSize", _G, "Bytes of the replica's log.", BUCKET)
B_KV_SIZE = _spec(f"{TS}_table_bucket_logicalStorage", "kvSize", _G,
                  "Bytes of the bucket's RocksDB files (primary-key bucket leaders).", BUCKET)
B_REMOTE = f"{TS}_table_bucket_remoteLog"
B_REMOTE_NUM_SEGMENTS = _spec(B_REMOTE, "numSegments", _G, "Segments of the bucket's remote log (leaders).", BUCKET)
B_REMOTE_END_OFFSET = _spec(B_REMOTE, "endOffset", _G, "End offset of the bucket's remote log (leaders; -1: none).",
                            BUCKET)
B_REMOTE_SIZE = _spec(B_REMOTE, "size", _G, "Bytes of the bucket's remote log (leaders).", BUCKET)

# ---------------------------------------------------------------- both servers
REQUEST_SCOPES = {"coordinator": f"{CS}_request", "tabletserver": f"{TS}_request"}
REQUESTS = {s: _spec(scope, "requestsPerSecond", _M, "Requests of each API (label request).", REQUEST)
            for s, scope in REQUEST_SCOPES.items()}
ERRORS = {s: _spec(scope, "errorsPerSecond", _M, "Requests answered with a request-level error.", REQUEST)
          for s, scope in REQUEST_SCOPES.items()}
TOTAL_TIME = {s: _spec(scope, "totalTimeMs", _H, "Time from a request's arrival to its response (ms).", REQUEST)
              for s, scope in REQUEST_SCOPES.items()}
ZK_SESSION_STATE = {s: _spec(f"{s}_zookeeper", "sessionState", _G,
                             "1 for the ZooKeeper session's current state (connected, suspended, lost), else 0.",
                             ("state",)) for s in ("coordinator", "tabletserver")}
ZK_SESSION_LOSSES = {s: _spec(f"{s}_zookeeper", "sessionLosses", _C, "ZooKeeper sessions that expired.")
                     for s in ("coordinator", "tabletserver")}

# ---------------------------------------------------------------- client (client.metrics.enabled)
CW = "client_writer"
W_RECORDS_SEND = _spec(CW, "recordSendPerSecond", _M, "Records acknowledged by the tablet servers.", TABLE)
W_BYTES_SEND = _spec(CW, "bytesSendPerSecond", _M, "Bytes of batches acknowledged by the tablet servers.", TABLE)
W_RECORDS_RETRY = _spec(CW, "recordsRetryPerSecond", _M, "Records sent again after a retriable error.", TABLE)
W_RECORDS_PER_BATCH = _spec(CW, "recordsPerBatch", _H, "Records per sent batch.", TABLE)
W_BYTES_PER_BATCH = _spec(CW, "bytesPerBatch", _H, "Bytes per sent batch.", TABLE)
W_SEND_LATENCY = _spec(CW, "sendLatencyMs", _H, "Time from sending a write request to its answer (ms).", TABLE)
W_BATCH_QUEUE_TIME = _spec(CW, "batchQueueTimeMs", _H, "Time a batch waited in the writer before it was sent (ms).",
                           TABLE)
W_BUFFER_TOTAL = _spec(CW, "bufferTotalBytes", _G, "writer.buffer.memory-size of the writer.", TABLE)
W_BUFFER_AVAILABLE = _spec(CW, "bufferAvailableBytes", _G, "Buffer bytes not held by unacknowledged batches.", TABLE)
W_BUFFER_WAITING = _spec(CW, "bufferWaitingThreads", _G, "Threads blocked because the buffer is full.", TABLE)
CSC = "client_scanner"
SCANNER = ("database", "table", "scanner_id")
S_FETCH = _spec(CSC, "fetchRequestsPerSecond", _M, "FetchLog requests the scanner sent.", SCANNER)
S_BYTES_PER_REQUEST = _spec(CSC, "bytesPerRequest", _H, "Bytes of records per fetch answer.", SCANNER)
S_FETCH_LATENCY = _spec(CSC, "fetchLatencyMs", _H, "Time of a FetchLog request (ms, long-poll included).", SCANNER)
S_RECORDS_LAG = _spec(CSC, "recordsLag", _G, "Records between the scanner's position and the high watermark, "
                      "all buckets.", SCANNER)
S_TIME_BETWEEN_POLL = _spec(CSC, "timeMsBetweenPoll", _G, "Time between the last two poll() calls (ms).", SCANNER)
S_LAST_POLL_AGO = _spec(CSC, "lastPollSecondsAgo", _G, "Seconds since the last poll() call.", SCANNER)
S_BUCKET_LAG = _spec(f"{CSC}_bucket", "recordsLag", _G, "Records between the scanner's position in the bucket and "
                     "its high watermark (as of the last fetch of it).", (*SCANNER, "partition", "bucket"))
CL = "client_lookuper"
L_LOOKUPS = _spec(CL, "lookupsPerSecond", _M, "Keys looked up (lookups and prefix lookups).", TABLE)
L_REQUESTS = _spec(CL, "lookupRequestsPerSecond", _M, "Lookup and PrefixLookup requests sent.", TABLE)
L_LATENCY = _spec(CL, "lookupLatencyMs", _H, "Time from the oldest key of a request being asked to its answer (ms).",
                  TABLE)

# ---------------------------------------------------------------- REST gateway (fluss gateway, GET /metrics)
GW = "gateway_request"
GATEWAY = ("request",)  # the route's operation id (appendRows, lookup, ...), "dashboard" or "unmatched"
GW_REQUESTS = _spec(GW, "requestsPerSecond", _M, "HTTP requests the gateway answered, per operation.", GATEWAY)
GW_ERRORS = _spec(GW, "errorsPerSecond", _M, "Requests answered with a 4xx or 5xx status.", GATEWAY)
GW_SERVER_ERRORS = _spec(GW, "serverErrorsPerSecond", _M, "Requests answered with a 5xx status.", GATEWAY)
GW_TOTAL_TIME = _spec(GW, "totalTimeMs", _H, "Time from a request's arrival to the end of its response (ms).",
                      GATEWAY)
GW_IN_FLIGHT = _spec("gateway", "requestsInFlight", _G, "Requests being answered now.")
