"""The catalogue: every scenario of issue 8, which measurement answers it, and what it is compared with.

A scenario's figure comes from this project (system ``fluss``); its raw limit and each peer's figure are looked up
by key among the same run's measurements. ``available=False`` marks a feature that has not landed: the scenario
is listed as not available (its raw limit may still be measured, and is shown on its own), never faked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PEERS = ("redis", "kafka-java", "kafka-python", "apache-fluss")


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    unit: str
    better: str = "higher"
    raw: str | None = None                                   # key of the raw-limit measurement
    peers: dict[str, str] = field(default_factory=dict)      # peer system -> key of its comparable figure
    available: bool = True
    note: str = ""


_LOG_PEERS_APPEND = {"redis": "log.append", "kafka-java": "log.append", "kafka-python": "log.append",
                     "apache-fluss": "log.append.rf1"}
_LOG_PEERS_APPEND_MB = {"redis": "log.append.mb", "kafka-java": "log.append.mb", "apache-fluss": "log.append.rf1.mb"}
_LOG_PEERS_SCAN = {"redis": "log.scan.full", "kafka-java": "log.scan.full", "kafka-python": "log.scan.full",
                   "apache-fluss": "log.scan.full"}
_NO_PROJECTION = "peers cannot project columns: compared with their full scan"

SCENARIOS: list[Scenario] = [
    Scenario("log.append.rf1", "log append RF=1", "rows/s", raw="log.append", peers=_LOG_PEERS_APPEND),
    Scenario("log.append.rf1.mb", "log append RF=1", "MB/s", raw="log.append.mb", peers=_LOG_PEERS_APPEND_MB),
    Scenario("log.append.rf3", "log append RF=3 acks=all", "rows/s", raw="log.append",
             peers={"kafka-java": "log.append.rf3", "apache-fluss": "log.append.rf3"},
             note="kafka-java: 3 brokers, min.insync.replicas=2; Redis runs a single node: no RF=3 figure"),
    Scenario("log.append.rf3.mb", "log append RF=3 acks=all", "MB/s", raw="log.append.mb",
             peers={"kafka-java": "log.append.rf3.mb", "apache-fluss": "log.append.rf3.mb"}),
    Scenario("log.scan.full", "full scan (10 cols)", "rows/s", raw="log.scan.full", peers=_LOG_PEERS_SCAN),
    Scenario("log.scan.projected", "projected scan (2/10)", "rows/s", raw="log.scan.projected",
             peers={**_LOG_PEERS_SCAN, "apache-fluss": "log.scan.projected"}, note=_NO_PROJECTION),
    Scenario("log.scan.full.tuned", "full scan, tuned fetch", "rows/s", raw="log.scan.full",
             peers={**_LOG_PEERS_SCAN, "apache-fluss": "log.scan.full.tuned"},
             note="scanner.log.fetch.wait-max-time=5ms, max-bytes-for-bucket=16mb"),
    Scenario("log.scan.projected.tuned", "projected scan, tuned fetch", "rows/s", raw="log.scan.projected",
             peers={**_LOG_PEERS_SCAN, "apache-fluss": "log.scan.projected.tuned"}, note="as above; " + _NO_PROJECTION),
    Scenario("log.append.nested", "log append RF=1, nested columns", "rows/s",
             note="ts, seq, ARRAY<INT> of 5, MAP<STRING, INT> of 3, ROW of 3 fields; compare log.append.rf1"),
    Scenario("log.append.nested.mb", "log append RF=1, nested columns", "MB/s"),
    Scenario("log.scan.nested", "full scan, nested columns", "rows/s",
             note="the log.append.nested table; compare log.scan.full (10 flat columns)"),
    Scenario("log.latency.p50", "append->poll p50 @10k rows/s", "ms", better="lower",
             peers={"redis": "log.latency.p50", "kafka-java": "log.latency.p50", "kafka-python": "log.latency.p50",
                    "apache-fluss": "log.latency.p50"},
             note="kafka-java: EndToEndLatency, one message in flight"),
    Scenario("log.latency.p99", "append->poll p99 @10k rows/s", "ms", better="lower",
             peers={"redis": "log.latency.p99", "kafka-java": "log.latency.p99", "kafka-python": "log.latency.p99",
                    "apache-fluss": "log.latency.p99"},
             note="kafka-java: EndToEndLatency, one message in flight"),
    Scenario("kv.upsert", "primary-key upsert", "rows/s", raw="kv.put", peers={"redis": "kv.upsert"},
             note="per-row upsert() calls; raw = rocksdict WriteBatch"),
    Scenario("kv.upsert.arrow", "primary-key upsert, Arrow batches", "rows/s", raw="kv.put",
             peers={"redis": "kv.upsert"}, note="upsert_arrow_batch of 10,000-row batches; raw = rocksdict WriteBatch"),
    Scenario("kv.lookup.batched", "lookup, batched", "rows/s", raw="kv.multiget", peers={"redis": "kv.lookup.batched"},
             note="1,000 concurrent lookup() calls; raw = rocksdict multi-get"),
    Scenario("kv.lookup.latency.p50", "lookup, single key p50", "ms", better="lower",
             peers={"redis": "kv.lookup.latency.p50"}),
    Scenario("kv.lookup.latency.p99", "lookup, single key p99", "ms", better="lower",
             peers={"redis": "kv.lookup.latency.p99"}),
    Scenario("gateway.append.json", "gateway append, JSON", "rows/s",
             note="POST .../records, FIP-49 JSON entries, 2,000 rows per request, 4 in flight; compare "
                  "gateway.append.native"),
    Scenario("gateway.append.arrow", "gateway append, Arrow IPC", "rows/s",
             note="POST .../records, Arrow stream bodies of 50,000 rows, 2 in flight; compare gateway.append.native"),
    Scenario("gateway.append.native", "native client append (same run)", "rows/s",
             note="AppendWriter.write_arrow_batch, the gateway family's cluster and rows"),
    Scenario("gateway.lookup.p50", "gateway lookup, single key p50", "ms", better="lower",
             note="POST .../lookup, one key at a time; compare gateway.lookup.native.p50"),
    Scenario("gateway.lookup.p99", "gateway lookup, single key p99", "ms", better="lower"),
    Scenario("gateway.lookup.native.p50", "native lookup p50 (same run)", "ms", better="lower"),
    Scenario("gateway.lookup.native.p99", "native lookup p99 (same run)", "ms", better="lower"),
    Scenario("kv.recovery", "KV restart per 1M rows (local)", "s", better="lower", raw="kv.recovery",
             note="kill -9 + restart of the tablet server until lookups succeed; raw = rocksdict open + read all"),
    Scenario("kv.recovery.snapshot", "KV recovery per 1M rows (snap.)", "s", better="lower", raw="kv.recovery",
             note="as above with the local KV directory removed: KV snapshot download + changelog replay"),
    Scenario("kv.recovery.replay", "KV rebuild per 1M rows (changelog)", "s", better="lower", raw="kv.recovery",
             note="local KV directory removed and no KV snapshot: the whole changelog replayed from the log"),
    Scenario("log.failover.rf3", "RF=3 leader failover", "s", better="lower",
             note="kill -9 of the leader -> next acks=all write acknowledged (ZooKeeper session timeout 2s)"),
    Scenario("log.reassign", "log bucket reassignment", "MB/s",
             note="alter_table_assignment -> move finished, leadership moved, RF=2, no throttle"),
    Scenario("kv.reassign", "primary-key bucket reassignment", "MB/s",
             note="as above, until the new leader answers a lookup (KV state rebuilt)"),
    Scenario("log.reassign.write.p99.before", "acks=all write p99, no move", "ms", better="lower"),
    Scenario("log.reassign.write.p99.during", "acks=all write p99, during a move", "ms", better="lower",
             note="the same writer while a log bucket of another table moves"),
    Scenario("rebalance.write.p99.before", "acks=all write p99, before a rebalance", "ms", better="lower"),
    Scenario("rebalance.write.p99.during", "acks=all write p99, during a 3->4 rebalance", "ms", better="lower",
             note="the same writer while a fourth server takes its share of every table"),
    Scenario("rebalance.time", "3->4 server rebalance", "s", better="lower",
             note="rebalance() -> COMPLETED, bucket moves one at a time"),
    Scenario("remote.scan.local", "scan, log kept local (tiered table)", "rows/s",
             note="the same rows as remote.scan.*, every segment local; full scan from earliest"),
    Scenario("remote.scan.folder", "scan from remote segments (folder)", "rows/s",
             note="remote.data.dir a local folder; the client downloads the segments (prefetch 4), then reads"),
    Scenario("remote.scan.s3", "scan from remote segments (S3 API)", "rows/s",
             note="remote.data.dir on moto's S3 server on loopback"),
    Scenario("remote.upload.folder", "tiered log upload (folder)", "MB/s", raw="remote.copy.folder",
             note="segment uploads as the tablet server timed them; raw = fs.put_file of the same files"),
    Scenario("remote.upload.s3", "tiered log upload (S3 API)", "MB/s", raw="remote.copy.s3",
             note="as above, moto's S3 server on loopback"),
    Scenario("tiering", "lake tiering throughput", "rows/s", raw="tiering",
             note="tier_table into Paimon; raw = pypaimon writing the same Arrow batches"),
    Scenario("tiering.freshness.p50", "lake freshness lag p50 @10k/s", "s", better="lower",
             note="write -> visible in the Paimon snapshot, continuous PyFlink job, freshness 5s"),
    Scenario("tiering.freshness.max", "lake freshness lag max @10k/s", "s", better="lower"),
    Scenario("flink.insert", "Flink SQL INSERT from datagen", "rows/s", raw="flink.insert.blackhole",
             note="raw = the same job into blackhole"),
    Scenario("flink.read", "Flink SQL bounded read", "rows/s", raw="flink.read.datagen",
             note="into blackhole; raw = datagen into blackhole"),
    Scenario("metrics.append.off", "log append, metrics not reported", "rows/s",
             note="the servers' counters stay on: their cost per write is metrics.hotpath.ns"),
    Scenario("metrics.append.on", "log append, metrics reported", "rows/s",
             note="Prometheus reporters, client metrics, every server scraped once a second"),
    Scenario("metrics.lookup.off", "batched lookup, metrics not reported", "rows/s"),
    Scenario("metrics.lookup.on", "batched lookup, metrics reported", "rows/s"),
    Scenario("metrics.scrape.1000_buckets", "scrape of a tablet server with 1,000 buckets", "ms", better="lower"),
]

NOT_LANDED = "not available: the feature has not landed, so the suite does not measure it"


@dataclass(frozen=True)
class Goal:
    """A target of issue 3: ``numerator / denominator >= at_least`` (scenario ids, or ``PAIRED_RAW``)."""

    text: str
    numerator: str
    denominator: str
    at_least: float


PAIRED_RAW = "paired-raw"  # denominator meaning "the raw append measured right after each round"

GOALS = [
    Goal("appends >= 25% of the raw file rate (RF=1, paired per round)", "log.append.rf1", PAIRED_RAW, 0.25),
    Goal("projected scan (2 of 10 columns) >= 3x the full scan", "log.scan.projected", "log.scan.full", 3.0),
    Goal("same, with the tuned fetch settings", "log.scan.projected.tuned", "log.scan.full.tuned", 3.0),
    Goal("appends with metrics reported >= 95% of appends without", "metrics.append.on", "metrics.append.off", 0.95),
    Goal("lookups with metrics reported >= 95% of lookups without", "metrics.lookup.on", "metrics.lookup.off", 0.95),
]
