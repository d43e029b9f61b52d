"""Server configuration: ``server.yaml`` with Apache Fluss's keys, overridden by command-line ``-D key=value``.

Keys are module-level constants named after the key; ``SERVER_OPTIONS`` declares each one once (type, default,
bounds, description; ``fluss.options``). ``ServerConfig`` keeps the raw string map and offers typed getters with
the declared defaults. At start-up a server calls :meth:`ServerConfig.check`: a key the registry does not know, or
one it knows but this project does not implement yet, is logged as a warning (naming the closest known key), and
an invalid value of a known key stops the start with an error naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import yaml

from fluss.config_values import parse_bool, parse_duration_ms, parse_int, parse_memory_size
from fluss.errors import ErrorCode, FlussError
from fluss.fs import (
    S3_ACCESS_KEY,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_PATH_STYLE_ACCESS_ALIAS,
    S3_REGION,
    S3_SECRET_KEY,
    S3_SESSION_TOKEN,
)
from fluss.options import Option, OptionRegistry, OptionType
from fluss.rpc.listeners import Listener, parse_listeners

ZOOKEEPER_ADDRESS = "zookeeper.address"
ZOOKEEPER_PATH_ROOT = "zookeeper.path.root"
ZOOKEEPER_SESSION_TIMEOUT = "zookeeper.client.session-timeout"
BIND_LISTENERS = "bind.listeners"
ADVERTISED_LISTENERS = "advertised.listeners"
TABLET_SERVER_ID = "tablet-server.id"
TABLET_SERVER_RACK = "tablet-server.rack"
COORDINATOR_ID = "coordinator.id"
DATA_DIR = "data.dir"
REMOTE_DATA_DIR = "remote.data.dir"
DEFAULT_BUCKET_NUMBER = "default.bucket.number"
DEFAULT_REPLICATION_FACTOR = "default.replication.factor"
MIN_ISR = "log.replica.min-in-sync-replicas-number"
REPLICA_MAX_LAG_TIME = "log.replica.max-lag-time"
REPLICA_FETCH_WAIT_MAX_TIME = "log.replica.fetch.wait-max-time"
REPLICA_CATCH_UP_THROTTLE = "log.replica.catch-up-throttle"
REBALANCE_MAX_INFLIGHT = "coordinator.rebalance.max-inflight-tasks"
LOG_SEGMENT_FILE_SIZE = "log.segment.file-size"
LOG_INDEX_INTERVAL_SIZE = "log.index.interval-size"
LOG_RETENTION_CHECK_INTERVAL = "log.retention.check-interval"
MAX_PARTITION_NUM = "max.partition.num"
MAX_BUCKET_NUM = "max.bucket.num"
MAX_REQUEST_SIZE = "netty.server.max-request-size"
KV_SNAPSHOT_INTERVAL = "kv.snapshot.interval"
KV_SNAPSHOT_NUM_RETAINED = "kv.snapshot.num-retained"
HIGH_WATERMARK_CHECKPOINT_INTERVAL = "log.replica.high-watermark.checkpoint-interval"
REMOTE_LOG_TASK_INTERVAL = "remote.log.task-interval-duration"  # 0 disables the tiered log
REMOTE_LOG_INDEX_FILE_CACHE_SIZE = "remote.log.index-file-cache-size"
REMOTE_LOG_MANAGER_THREAD_POOL_SIZE = "remote.log-manager.thread-pool-size"
REMOTE_LOG_DATA_TRANSFER_THREAD_NUM = "remote.log.data-transfer-thread-num"

AUTO_PARTITION_CHECK_INTERVAL = "auto-partition.check.interval"
DATALAKE_FORMAT = "datalake.format"
INTERNAL_LISTENER_NAME = "internal.listener.name"
METRICS_REPORTERS = "metrics.reporters"
METRICS_PROMETHEUS_PORT = "metrics.reporter.prometheus.port"
METRICS_METER_WINDOW = "metrics.meter.window"
METRICS_BUCKET_LEVEL_MAX_BUCKETS = "metrics.bucket-level.max-buckets"
LOG_LEVEL = "log.level"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

_S, _I, _B, _DUR, _MEM = OptionType.STRING, OptionType.INT, OptionType.BOOLEAN, OptionType.DURATION, \
    OptionType.MEMORY_SIZE


def _later(key: str, kind: OptionType, default: str | None, description: str, planned: str) -> Option:
    return Option(key, kind, default, description, implemented=False, planned=planned)



#: Every server option this project knows (Fluss's keys), with its default.
SERVER_OPTIONS = OptionRegistry("server option", [
    Option(ZOOKEEPER_ADDRESS, _S, None, "ZooKeeper connect string host:port[,host:port] (required)."),
    Option(ZOOKEEPER_PATH_ROOT, _S, "/fluss", "ZooKeeper node under which the cluster keeps its metadata."),
    Option(ZOOKEEPER_SESSION_TIMEOUT, _DUR, "6s", "ZooKeeper session timeout: how soon a dead server is noticed.",
           min=1),
    Option(BIND_LISTENERS, _S, "FLUSS://127.0.0.1:9123", "Listeners NAME://host:port[,...] the server binds."),
    Option(ADVERTISED_LISTENERS, _S, None, "Listeners announced to clients (default: bind.listeners)."),
    Option(INTERNAL_LISTENER_NAME, _S, "FLUSS", "Listener used between servers (replication, coordinator "
           "notifications); with a single listener, that one."),
    Option(TABLET_SERVER_ID, _I, None, "Id of a tablet server (required for tablet servers).", min=0),
    Option(TABLET_SERVER_RACK, _S, None, "Rack (failure domain) of a tablet server: replicas of a bucket are spread "
           "over racks. Set it on every tablet server or on none."),
    Option(COORDINATOR_ID, _I, "0", "Id of a coordinator server.", min=0),
    Option(DATA_DIR, _S, "/tmp/fluss-data", "Local directory of a tablet server's logs and KV state."),
    Option(REMOTE_DATA_DIR, _S, "", "fsspec URL of the remote storage (KV snapshots, lake warehouse default)."),
    Option(DEFAULT_BUCKET_NUMBER, _I, "1", "Buckets of a table that does not say.", min=1),
    Option(DEFAULT_REPLICATION_FACTOR, _I, "1", "Replication factor of a table that does not say.", min=1),
    Option(MIN_ISR, _I, "1", "In-sync replicas an acks=all write needs.", min=1),
    Option(REPLICA_MAX_LAG_TIME, _DUR, "30s", "A follower not caught up for this long leaves the ISR.", min=1),
    Option(REPLICA_FETCH_WAIT_MAX_TIME, _DUR, "500ms", "How long a follower fetch waits on the leader.", min=0),
    Option(REPLICA_CATCH_UP_THROTTLE, _MEM, None, "Bytes per second a leader serves, all buckets together, to "
           "followers outside the ISR (new replicas of a reassignment, followers that fell behind); unset: no limit.",
           min=1, dynamic=True),
    Option(REBALANCE_MAX_INFLIGHT, _I, "1", "Buckets a rebalance moves at the same time (Fluss's default 1); 0 "
           "pauses starting new ones (moves in flight go on).", min=0, dynamic=True),
    Option(LOG_SEGMENT_FILE_SIZE, _MEM, "1gb", "Size of a log segment file.", min=1, max=(1 << 31) - 1),
    Option(LOG_INDEX_INTERVAL_SIZE, _MEM, "4kb", "Bytes between two offset-index entries.", min=0),
    Option(LOG_RETENTION_CHECK_INTERVAL, _DUR, "5min", "How often expired log segments are deleted.", min=1,
           dynamic=True),
    Option("log.flush.interval-messages", _I, None, "Records after which a log segment is fsynced.", min=1),
    Option(MAX_PARTITION_NUM, _I, "1000", "Partitions the cluster may hold.", min=1),
    Option(MAX_BUCKET_NUM, _I, "128000", "Buckets a table may have.", min=1),
    Option(MAX_REQUEST_SIZE, _MEM, "100mb", "Largest records payload one write request may carry per bucket.",
           min=1),
    Option(KV_SNAPSHOT_INTERVAL, _DUR, "10min", "How often changed KV state is snapshotted to remote storage.",
           min=1, dynamic=True),
    Option(KV_SNAPSHOT_NUM_RETAINED, _I, "2", "KV snapshots kept per bucket.", min=1),
    Option(HIGH_WATERMARK_CHECKPOINT_INTERVAL, _DUR, "5s",
           "How often each bucket's high watermark and recovery point are checkpointed.", min=1, dynamic=True),
    Option(DATALAKE_FORMAT, OptionType.ENUM, None, "The cluster's data lake format (unset: no lake).",
           values=("paimon", "iceberg", "lance"), supported_values=("paimon",), dynamic=True),
    Option("datalake.paimon.*", _S, None, "Paimon catalog options of the lake (warehouse, metastore, ...).",
           dynamic=True),
    Option(REMOTE_LOG_TASK_INTERVAL, _DUR, "1min", "How often a bucket leader copies sealed log segments to "
           "remote storage (0: no tiered log).", min=0, dynamic=True),
    Option(REMOTE_LOG_INDEX_FILE_CACHE_SIZE, _MEM, "1gb", "Bytes of remote index files cached on local disk.",
           min=0),
    Option(REMOTE_LOG_MANAGER_THREAD_POOL_SIZE, _I, "4", "Buckets whose remote log is handled at once.", min=1),
    Option(REMOTE_LOG_DATA_TRANSFER_THREAD_NUM, _I, "4", "Threads copying one segment's files to remote storage.",
           min=1),
    Option(S3_ENDPOINT, _S, None, "Endpoint URL of an S3-compatible store (default: AWS)."),
    Option(S3_REGION, _S, None, "S3 signing region (us-east-1 when unset)."),
    Option(S3_ACCESS_KEY, _S, None, "S3 access key id (default: the AWS credential chain)."),
    Option(S3_SECRET_KEY, _S, None, "S3 secret access key."),
    Option(S3_SESSION_TOKEN, _S, None, "S3 session token of temporary credentials."),
    Option(S3_PATH_STYLE_ACCESS, _B, None, "Path-style S3 addressing (MinIO, moto); virtual-host style when unset."),
    Option(S3_PATH_STYLE_ACCESS_ALIAS, _B, None, "Alias of s3.path.style.access."),
    Option(AUTO_PARTITION_CHECK_INTERVAL, _DUR, "10min", "How often automatic partitions are created and dropped.",
           min=1, dynamic=True),
    Option(METRICS_REPORTERS, _S, None, "Metric reporters to start (prometheus); unset: metrics are kept but not "
           "exported."),
    Option(METRICS_PROMETHEUS_PORT, _S, "9249", "Port, or range like 9250-9260, of the Prometheus endpoint (the "
           "first free one is used, so several servers can share a host)."),
    Option(METRICS_METER_WINDOW, _DUR, "60s", "Window over which a ...PerSecond metric is averaged.", min=1),
    Option(METRICS_BUCKET_LEVEL_MAX_BUCKETS, _I, "2000", "Replicas of a tablet server that get bucket-level "
           "series (the rest are in the server and table sums only).", min=0),
    Option(LOG_LEVEL, OptionType.ENUM, "INFO", "Level of the server's log (root logger).", values=LOG_LEVELS),
    Option(LOG_LEVEL + ".*", OptionType.ENUM, None, "Level of one component's log, e.g. log.level.fluss.rpc: "
           "DEBUG (a logger name; fluss.server.replica covers everything below it).", values=LOG_LEVELS),
    Option("security.protocol.map", _S, None, "Listener to security protocol, e.g. CLIENT:SASL,INTERNAL:PLAINTEXT "
           "(a listener not named is PLAINTEXT)."),
    Option("security.sasl.enabled.mechanisms", _S, "PLAIN", "SASL mechanisms the servers accept (PLAIN)."),
    Option("security.sasl.plain.jaas.config", _S, None, "JAAS entry of the PLAIN users: "
           "'...PlainLoginModule required user_<name>=\"<password>\" ...;' (username/password: the server's own)."),
    Option("security.sasl.listener.name.*", _S, None, "Per-listener JAAS entry: "
           "security.sasl.listener.name.<listener>.plain.jaas.config."),
    Option("authorizer.enabled", _B, "false", "Check ACLs on every request."),
    Option("authorizer.type", OptionType.ENUM, "default", "The authorizer (the built-in ACL authorizer).",
           values=("default",)),
    Option("super.users", _S, None, "Principals that bypass ACLs: User:admin;User:ops."),
    Option("security.ssl.listeners", _S, None, "Listeners served over TLS, e.g. CLIENT,INTERNAL (default none)."),
    Option("security.ssl.certificate.path", _S, None, "PEM certificate chain of this server (TLS listeners)."),
    Option("security.ssl.key.path", _S, None, "PEM private key of this server's certificate."),
    Option("security.ssl.truststore.path", _S, None, "PEM CA certificates trusted for client certificates and for "
           "the other servers' internal listener (unset: the system's roots)."),
    Option("security.ssl.client-auth", OptionType.ENUM, "none", "Whether TLS clients must show a certificate "
           "signed by a trusted CA.", values=("none", "required")),
])

DEFAULTS: dict[str, str] = {o.key: o.default for o in SERVER_OPTIONS if o.default is not None and not o.is_pattern
                            and o.implemented}


class ServerConfig:
    """The options of one server process: its static values (``server.yaml`` and ``-D``) under the cluster's
    dynamic overrides (``admin.alter_cluster_configs``, kept in ZooKeeper; ``fluss.server.dynamic_config``
    installs them with :meth:`set_dynamic`). Every getter sees the override first, so a component that reads its
    option when it uses it (each round of a loop) follows a change without a restart."""

    def __init__(self, values: Mapping[str, object] | None = None) -> None:
        self._values: dict[str, str] = {k: str(v) for k, v in (values or {}).items()}
        self._dynamic: dict[str, str] = {}

    def set_dynamic(self, overrides: Mapping[str, str]) -> set[str]:
        """Installs the cluster's dynamic overrides (the whole set); returns the keys whose value changed."""
        new = {k: str(v) for k, v in overrides.items()}
        keys = set(self._dynamic) | set(new)
        before = {k: self.get(k) for k in keys}
        self._dynamic = new
        return {k for k in keys if self.get(k) != before[k]}

    @property
    def dynamic(self) -> dict[str, str]:
        return dict(self._dynamic)

    def static(self) -> dict[str, str]:
        """The values of the server's own configuration (without the dynamic overrides or defaults)."""
        return dict(self._values)

    def source_of(self, key: str) -> str | None:
        """Where the value of ``key`` comes from: ``DYNAMIC_SERVER_CONFIG``, ``INITIAL_SERVER_CONFIG`` (the
        server's own configuration), ``DEFAULT_CONFIG``, or None when it has no value."""
        if key in self._dynamic:
            return "DYNAMIC_SERVER_CONFIG"
        if key in self._values:
            return "INITIAL_SERVER_CONFIG"
        return "DEFAULT_CONFIG" if key in DEFAULTS else None

    @classmethod
    def load(cls, path: str | Path | None, overrides: Mapping[str, str] | None = None) -> ServerConfig:
        values: dict[str, object] = {}
        if path:
            try:
                loaded = yaml.safe_load(Path(path).read_text()) or {}
            except (OSError, yaml.YAMLError) as e:
                raise FlussError(f"Cannot read server config {path}: {e}", ErrorCode.INVALID_CONFIG_EXCEPTION) from e
            if not isinstance(loaded, dict):
                raise FlussError(f"Server config {path} must be a mapping of keys to values",
                                 ErrorCode.INVALID_CONFIG_EXCEPTION)
            values.update(_flatten(loaded))
        values.update(overrides or {})
        return cls(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        if key in self._dynamic:
            return self._dynamic[key]
        if key in self._values:
            return self._values[key]
        return DEFAULTS.get(key, default)

    def require(self, key: str) -> str:
        value = self.get(key)
        if value in (None, ""):
            raise FlussError(f"Missing required server option '{key}'", ErrorCode.INVALID_CONFIG_EXCEPTION)
        return value

    def get_int(self, key: str) -> int:
        return parse_int(self.require(key), key)

    def get_bool(self, key: str, default: bool = False) -> bool:
        value = self.get(key)
        return default if value is None else parse_bool(value, key)

    def get_bytes(self, key: str) -> int:
        return parse_memory_size(self.require(key), key)

    def get_duration_ms(self, key: str) -> int:
        return parse_duration_ms(self.require(key), key)

    def check(self, warn: Callable[[str], None] | None = None) -> list[str]:
        """Validates every value against ``SERVER_OPTIONS``; returns (and passes to ``warn`` as it finds them) the
        warnings about keys it does not use.

        Raises:
            FlussError: INVALID_CONFIG_EXCEPTION naming the key of the first invalid value.
        """
        warnings: list[str] = []

        def warning(text: str) -> None:
            warnings.append(text)
            if warn is not None:
                warn(text)

        for key in sorted(self._values):
            option = SERVER_OPTIONS.get(key)
            if option is None:
                warning(f"{SERVER_OPTIONS.unknown_key_message(key)} (ignored)")
            elif not option.implemented:
                warning(f"Server option '{key}' is not supported yet by this Fluss implementation (ignored)")
        for key, value in sorted(self._values.items()):
            option = SERVER_OPTIONS.get(key)
            if option is not None and option.implemented:
                option.parse(value, "the server configuration")
        self.bind_address()
        if self.get(ADVERTISED_LISTENERS):
            self.advertised_address()
        from fluss.metrics.prometheus import parse_port_range
        from fluss.metrics.reporters import reporter_names

        reporter_names(self.get(METRICS_REPORTERS))  # an unknown reporter stops the server before it starts
        parse_port_range(self.get(METRICS_PROMETHEUS_PORT) or "9249", METRICS_PROMETHEUS_PORT)
        self.security()
        self.rack()
        return warnings

    def rack(self) -> str | None:
        """``tablet-server.rack``: None when unset or blank; at most 128 printable characters."""
        raw = self.get(TABLET_SERVER_RACK)
        rack = str(raw).strip() if raw is not None else ""
        if not rack:
            return None
        if len(rack) > 128 or not rack.isprintable():
            raise FlussError(f"Invalid value {rack!r} for '{TABLET_SERVER_RACK}': a rack name is at most 128 "
                             "printable characters", ErrorCode.INVALID_CONFIG_EXCEPTION)
        return rack

    def as_dict(self) -> dict[str, str]:
        return {**DEFAULTS, **self._values, **self._dynamic}

    def process_name(self, kind: str) -> str:
        """``coordinator-<coordinator.id>`` or ``tablet-server-<tablet-server.id>`` (log lines and metrics)."""
        if kind == "coordinator":
            return f"coordinator-{self.get(COORDINATOR_ID) or 0}"
        return f"tablet-server-{self.get(TABLET_SERVER_ID) or '?'}"

    def bind_listeners(self) -> list[Listener]:
        """Every listener of ``bind.listeners`` (the server binds each)."""
        return parse_listeners(self.require(BIND_LISTENERS), BIND_LISTENERS)

    def bind_address(self) -> tuple[str, int]:
        """Host and port of the first listener in ``bind.listeners`` (``NAME://host:port``)."""
        first = self.bind_listeners()[0]
        return first.host, first.port

    def advertised_listeners(self) -> list[Listener]:
        """Every bound listener as others should reach it: its ``advertised.listeners`` entry of the same name,
        else its bind address."""
        bound = self.bind_listeners()
        adv = self.get(ADVERTISED_LISTENERS)
        advertised = {lst.name: lst for lst in parse_listeners(adv, ADVERTISED_LISTENERS)} if adv else {}
        if adv and len(bound) == 1 and len(advertised) == 1:  # one listener: its name need not match
            return [next(iter(advertised.values()))]
        return [advertised.get(lst.name, lst) for lst in bound]

    def security(self):
        """The security settings (``fluss.server.security.settings``), checked."""
        from fluss.server.security.settings import SecuritySettings

        return SecuritySettings.from_config(self.get, self.bind_listeners())

    def internal_endpoint(self) -> tuple[str, int]:
        """Host and port of the internal listener (``internal.listener.name``) as other servers reach it."""
        internal = self.security().internal_listener
        found = next(lst for lst in self.advertised_listeners() if lst.name == internal)
        return found.host, found.port

    def advertised_endpoints(self) -> dict[str, str]:
        """Listener name → advertised ``host:port``."""
        return {lst.name: lst.address for lst in self.advertised_listeners()}

    def advertised_address(self) -> tuple[str, int]:
        adv = self.get(ADVERTISED_LISTENERS)
        if not adv:
            return self.bind_address()
        first = parse_listeners(adv, ADVERTISED_LISTENERS)[0]
        return first.host, first.port


def _flatten(tree: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """Accepts both flat ``a.b: v`` keys and nested YAML mappings."""
    out: dict[str, object] = {}
    for key, value in tree.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, full + "."))
        else:
            out[full] = value
    return out
