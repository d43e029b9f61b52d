"""Gateway configuration: the clusters it fronts, the client options it uses, and its request limits.

A gateway fronts one or more Fluss clusters, each under a cluster id used in the paths
(``/v1/clusters/{cluster}/...``). ``fluss gateway --bootstrap-servers host:9123`` configures one cluster with
the id ``default``; ``--cluster ID=host:port[,host:port]`` (repeatable) names several. The same settings come
from the environment for ``uvicorn fluss.gateway:app`` (see :meth:`GatewayConfig.from_env`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from fluss.config_values import parse_memory_size

DEFAULT_CLUSTER_ID = "default"
#: Environment variables read by :meth:`GatewayConfig.from_env`.
ENV_BOOTSTRAP = "FLUSS_GATEWAY_BOOTSTRAP_SERVERS"
ENV_CLUSTERS = "FLUSS_GATEWAY_CLUSTERS"  # "id=host:port,host:port;id2=host:port"
ENV_CLIENT_OPTIONS = "FLUSS_GATEWAY_CLIENT_OPTIONS"  # "key=value;key=value"
ENV_MAX_BODY = "FLUSS_GATEWAY_MAX_BODY_SIZE"
ENV_LEDGER_DATABASE = "FLUSS_GATEWAY_LEDGER_DATABASE"

_CLUSTER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass
class GatewayConfig:
    """``clusters``: cluster id -> bootstrap servers. Limits bound what one request may carry."""

    clusters: dict[str, str]
    client_options: dict[str, str] = field(default_factory=dict)
    #: Largest request body (JSON or Arrow), bytes; larger bodies get 413 ``limit_exceeded`` unread.
    max_body_bytes: int = 64 * 1024 * 1024
    #: Most rows (write entries, lookup keys) one JSON request may carry.
    max_json_rows: int = 100_000
    #: Most rows a read (scan, union read, prefix lookup) returns; a larger ``limit`` is refused.
    max_read_rows: int = 100_000
    #: Database of the write ledger that makes ``Idempotency-Key`` retries exactly-once (created on first use).
    ledger_database: str = "fluss_gateway"
    #: How long table metadata is cached (a DDL through this gateway drops its entry at once).
    metadata_ttl_s: float = 5.0
    #: Cluster whose web dashboard is mounted at ``/dashboard`` (``fluss dashboard``'s pages); None: no dashboard.
    dashboard_cluster: str | None = None
    #: Seconds between two scrapes of the servers' metrics by the mounted dashboard.
    dashboard_interval_s: float = 2.0

    def __post_init__(self) -> None:
        if not self.clusters:
            raise ValueError("a gateway needs at least one cluster (--bootstrap-servers or --cluster ID=ADDRESSES)")
        for cid, servers in self.clusters.items():
            if not _CLUSTER_ID.match(cid):
                raise ValueError(f"invalid cluster id {cid!r}: letters, digits, '_', '.', '-' (at most 64)")
            if not str(servers).strip():
                raise ValueError(f"cluster {cid!r} has no bootstrap servers")
        acks = str(self.client_options.get("writer.acks", self.client_options.get("client.writer.acks", "all")))
        if acks.lower() not in ("all", "-1", "1"):
            raise ValueError(f"writer.acks={acks}: the gateway answers a write only once it is acknowledged, "
                             "so acks must be 'all' or '1'")
        if self.dashboard_cluster is not None and self.dashboard_cluster not in self.clusters:
            raise ValueError(f"dashboard cluster {self.dashboard_cluster!r} is not one of the gateway's clusters "
                             f"({', '.join(sorted(self.clusters))})")
        if self.max_body_bytes < 1024:
            raise ValueError(f"max body size {self.max_body_bytes} is below 1 KiB")

    @classmethod
    def single(cls, bootstrap_servers: str, **kwargs) -> GatewayConfig:
        return cls({DEFAULT_CLUSTER_ID: bootstrap_servers}, **kwargs)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewayConfig:
        env = os.environ if env is None else env
        clusters = parse_clusters(env.get(ENV_CLUSTERS, "").split(";")) if env.get(ENV_CLUSTERS) else {}
        if env.get(ENV_BOOTSTRAP):
            clusters.setdefault(DEFAULT_CLUSTER_ID, env[ENV_BOOTSTRAP])
        kwargs: dict = {"client_options": parse_options(env.get(ENV_CLIENT_OPTIONS, "").split(";"))}
        if env.get(ENV_MAX_BODY):
            kwargs["max_body_bytes"] = parse_memory_size(env[ENV_MAX_BODY], ENV_MAX_BODY)
        if env.get(ENV_LEDGER_DATABASE):
            kwargs["ledger_database"] = env[ENV_LEDGER_DATABASE]
        return cls(clusters, **kwargs)


def parse_clusters(items: list[str]) -> dict[str, str]:
    """``["id=host:port,host:port", ...]`` -> ``{id: "host:port,host:port"}``."""
    out: dict[str, str] = {}
    for item in items:
        item = item.strip()
        if not item:
            continue
        cid, sep, servers = item.partition("=")
        if not sep:
            raise ValueError(f"cluster {item!r} must be ID=HOST:PORT[,HOST:PORT]")
        if cid.strip() in out:
            raise ValueError(f"cluster id {cid.strip()!r} is given twice")
        out[cid.strip()] = servers.strip()
    return out


def parse_options(items: list[str]) -> dict[str, str]:
    """``["key=value", ...]`` -> dict (client options such as ``writer.batch-timeout=5ms``)."""
    out: dict[str, str] = {}
    for item in items:
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"client option {item!r} must be KEY=VALUE")
        out[key.strip()] = value.strip()
    return out
