"""The JSON stored in each znode (see ``paths.py`` for where): one record type per node kind, encoded and decoded
here only (``encode`` / ``decode``), so the shape of a node's data is written down once."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


def dumps(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def loads(data: bytes) -> dict:
    return json.loads(data.decode()) if data else {}


@dataclass
class TabletServerRegistration:
    """``host``/``port``: the internal listener (other servers use it); ``endpoints``: every advertised listener,
    name → host:port (clients get the one of the listener they came through); ``rack``: ``tablet-server.rack``
    (None: the server has no rack; nodes written before racks existed have no key)."""

    host: str
    port: int
    register_time: int
    metrics_port: int = 0  # the Prometheus endpoint on host (0: none)
    endpoints: dict[str, str] = field(default_factory=dict)
    rack: str | None = None


@dataclass
class CoordinatorRegistration:
    id: int
    host: str
    port: int
    epoch: int
    endpoints: dict[str, str] = field(default_factory=dict)


@dataclass
class DatabaseRegistration:
    comment: str | None
    custom_properties: dict[str, str]
    created_time: int
    modified_time: int


@dataclass
class TableRegistration:
    """A table's node; its schema lives in ``schemas/{schema_id}``."""

    table_id: int
    schema_id: int
    partition_keys: list[str]
    bucket_count: int
    bucket_keys: list[str]
    comment: str | None
    properties: dict[str, str]
    custom_properties: dict[str, str]
    created_time: int
    modified_time: int
    # ALTER TABLE ADD: the column count of each schema id (entry i = id i + 1); empty until the first ADD
    schema_column_counts: list[int] = field(default_factory=list)


@dataclass
class PartitionRegistration:
    """A partition's node. ``bucket_count``: the partition's own number of buckets, the table's ``bucket.num`` when
    it was created (ALTER TABLE changes the count of later partitions only); 0 in nodes written before partitions had
    their own count, which then is the number of buckets of the partition's assignment."""

    partition_id: int
    table_id: int
    spec: dict[str, str]
    bucket_count: int = 0


@dataclass
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: list[int]
    coordinator_epoch: int
    bucket_epoch: int = 0


@dataclass
class KvSnapshotRecord:
    """A completed KV snapshot: its manifest lives under ``remote_dir``; replay starts at ``log_offset``."""

    snapshot_id: int
    log_offset: int
    remote_dir: str
    create_time: int
    leader_epoch: int


@dataclass
class LakeBucketOffset:
    """How far one bucket is tiered: the lake holds its records below ``log_offset``."""

    partition_id: int
    bucket_id: int
    log_offset: int
    max_timestamp: int = -1
    partition_name: str = ""


@dataclass
class LakeSnapshotRecord:
    """A table's latest lake snapshot as the coordinator records it (``lake_snapshot`` node)."""

    table_id: int
    snapshot_id: int
    commit_time: int = 0
    buckets: list[LakeBucketOffset] = field(default_factory=list)


@dataclass
class RemoteLogManifestRecord:
    """A bucket's committed remote log: its manifest file (in remote storage) and the offsets it covers."""

    manifest_path: str
    remote_log_start_offset: int  # -1: no segment (every one expired)
    remote_log_end_offset: int  # where the next upload continues
    remote_log_size: int
    segment_count: int
    leader_epoch: int
    commit_time: int


@dataclass
class Assignment:
    """Replica assignment of a table (or a partition): bucket -> server ids, the first one the preferred leader."""

    table_id: int
    buckets: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class ReassignmentRecord:
    """A bucket moving to ``target`` replicas (``/reassignments/...``): written with the widened assignment
    (``original`` + the new replicas), deleted with the final one (``target``)."""

    table_id: int
    partition_id: int  # -1: not partitioned
    bucket: int
    original: list[int]
    target: list[int]
    created_time: int = 0


@dataclass
class AclEntry:
    """One ACL of a resource's ``/acls/{type}/{name}`` node (the resource is the node)."""

    principal: str  # "User:alice"
    operation: str  # OperationType name
    permission: str  # "ALLOW" | "DENY"
    host: str = "*"


@dataclass
class ResourceAcls:
    acls: list[AclEntry] = field(default_factory=list)


def encode(obj: object) -> bytes:
    if isinstance(obj, Assignment):
        return dumps({"table_id": obj.table_id, "buckets": {str(b): r for b, r in obj.buckets.items()}})
    return dumps(asdict(obj))


def decode(cls: type, data: bytes):
    raw = loads(data)
    if cls is Assignment:
        return Assignment(raw["table_id"], {int(b): list(r) for b, r in raw["buckets"].items()})
    if cls is ResourceAcls:
        return ResourceAcls([AclEntry(**a) for a in raw.get("acls", [])])
    if cls is LakeSnapshotRecord:
        return LakeSnapshotRecord(raw["table_id"], raw["snapshot_id"], raw.get("commit_time", 0),
                                  [LakeBucketOffset(**b) for b in raw.get("buckets", [])])
    return cls(**raw)
