"""Server configuration: ``server.yaml`` with Apache Fluss's keys, overridden by command-line ``-D key=value``.

Keys are module-level constants named after the key. ``ServerConfig`` keeps the raw string map (so unknown
keys pass through untouched, as Fluss does) and offers typed getters with the documented defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from fluss.config_values import parse_bool, parse_duration_ms, parse_int, parse_memory_size
from fluss.errors import ErrorCode, FlussError

ZOOKEEPER_ADDRESS = "zookeeper.address"
ZOOKEEPER_PATH_ROOT = "zookeeper.path.root"
ZOOKEEPER_SESSION_TIMEOUT = "zookeeper.client.session-timeout"
BIND_LISTENERS = "bind.listeners"
ADVERTISED_LISTENERS = "advertised.listeners"
TABLET_SERVER_ID = "tablet-server.id"
COORDINATOR_ID = "coordinator.id"
DATA_DIR = "data.dir"
REMOTE_DATA_DIR = "remote.data.dir"
DEFAULT_BUCKET_NUMBER = "default.bucket.number"
DEFAULT_REPLICATION_FACTOR = "default.replication.factor"
MIN_ISR = "log.replica.min-in-sync-replicas-number"
REPLICA_MAX_LAG_TIME = "log.replica.max-lag-time"
REPLICA_FETCH_WAIT_MAX_TIME = "log.replica.fetch.wait-max-time"
LOG_SEGMENT_FILE_SIZE = "log.segment.file-size"
LOG_INDEX_INTERVAL_SIZE = "log.index.interval-size"
LOG_RETENTION_CHECK_INTERVAL = "log.retention.check-interval"
MAX_PARTITION_NUM = "max.partition.num"
MAX_BUCKET_NUM = "max.bucket.num"
MAX_REQUEST_SIZE = "netty.server.max-request-size"
KV_SNAPSHOT_INTERVAL = "kv.snapshot.interval"
KV_SNAPSHOT_NUM_RETAINED = "kv.snapshot.num-retained"

DEFAULTS: dict[str, str] = {
    ZOOKEEPER_PATH_ROOT: "/fluss",
    ZOOKEEPER_SESSION_TIMEOUT: "6s",
    BIND_LISTENERS: "FLUSS://127.0.0.1:9123",
    DATA_DIR: "/tmp/fluss-data",
    REMOTE_DATA_DIR: "",
    DEFAULT_BUCKET_NUMBER: "1",
    DEFAULT_REPLICATION_FACTOR: "1",
    MIN_ISR: "1",
    REPLICA_MAX_LAG_TIME: "30s",
    REPLICA_FETCH_WAIT_MAX_TIME: "500ms",
    LOG_SEGMENT_FILE_SIZE: "1gb",
    LOG_INDEX_INTERVAL_SIZE: "4kb",
    LOG_RETENTION_CHECK_INTERVAL: "5min",
    MAX_PARTITION_NUM: "1000",
    MAX_BUCKET_NUM: "128000",
    MAX_REQUEST_SIZE: "100mb",
    KV_SNAPSHOT_INTERVAL: "10min",
    KV_SNAPSHOT_NUM_RETAINED: "2",
}


class ServerConfig:
    """The options of one server process."""

    def __init__(self, values: Mapping[str, object] | None = None) -> None:
        self._values: dict[str, str] = {k: str(v) for k, v in (values or {}).items()}

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

    def as_dict(self) -> dict[str, str]:
        return {**DEFAULTS, **self._values}

    def bind_address(self) -> tuple[str, int]:
        """Host and port of the first listener in ``bind.listeners`` (``NAME://host:port``)."""
        return parse_listener(self.require(BIND_LISTENERS), BIND_LISTENERS)

    def advertised_address(self) -> tuple[str, int]:
        adv = self.get(ADVERTISED_LISTENERS)
        return parse_listener(adv, ADVERTISED_LISTENERS) if adv else self.bind_address()


def parse_listener(text: str, key: str) -> tuple[str, int]:
    first = text.split(",")[0].strip()
    _, _, hostport = first.rpartition("://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise FlussError(f"Invalid listener {first!r} in '{key}' (expected e.g. FLUSS://127.0.0.1:9123)",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return host or "0.0.0.0", int(port)


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
