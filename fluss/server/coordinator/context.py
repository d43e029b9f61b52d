"""The coordinator's in-memory view of the cluster, rebuilt from ZooKeeper when it becomes active.

Only the event processor mutates it (one event at a time); RPC handlers read it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fluss.metadata import Schema, ServerNode, ServerTag, TableBucket, TableDescriptor, TableInfo, TablePath
from fluss.server.coordinator.rebalance import RebalanceRecord
from fluss.server.zk.data import (
    Assignment,
    DatabaseRegistration,
    LeaderAndIsr,
    PartitionRegistration,
    ReassignmentRecord,
    TableRegistration,
)
from fluss.types import RowSchema


def table_info_of(path: TablePath, reg: TableRegistration, schema_json: dict) -> TableInfo:
    desc = TableDescriptor(
        Schema.of(RowSchema.from_json(schema_json)), partition_keys=reg.partition_keys,
        bucket_count=reg.bucket_count, bucket_keys=reg.bucket_keys, comment=reg.comment,
        properties=reg.properties, custom_properties=reg.custom_properties)
    return TableInfo(path, reg.table_id, reg.schema_id, desc, reg.created_time, reg.modified_time,
                     reg.schema_column_counts)


@dataclass
class PartitionEntry:
    table_id: int
    name: str
    reg: PartitionRegistration


@dataclass
class CoordinatorContext:
    epoch: int = 0
    live_servers: dict[int, ServerNode] = field(default_factory=dict)
    # register_time of each live server's ZooKeeper registration: a new value under a known id is a restart
    registered_at: dict[int, int] = field(default_factory=dict)
    databases: dict[str, DatabaseRegistration] = field(default_factory=dict)
    tables: dict[TablePath, TableInfo] = field(default_factory=dict)
    tables_by_id: dict[int, TableInfo] = field(default_factory=dict)
    partitions: dict[int, PartitionEntry] = field(default_factory=dict)  # by partition id
    assignments: dict[tuple[int, int], Assignment] = field(default_factory=dict)  # (table_id, partition_id)
    leaders: dict[TableBucket, tuple[LeaderAndIsr, int]] = field(default_factory=dict)  # with znode version
    lake_snapshots: dict[int, tuple[int, int]] = field(default_factory=dict)  # table id -> (snapshot id, commit ms)
    reassignments: dict[TableBucket, ReassignmentRecord] = field(default_factory=dict)  # buckets being moved
    server_tags: dict[int, ServerTag] = field(default_factory=dict)  # tablet server id -> its tag
    rebalance: RebalanceRecord | None = None  # the most recent rebalance (coordinator/rebalance.py)

    def add_table(self, info: TableInfo) -> None:
        self.tables[info.table_path] = info
        self.tables_by_id[info.table_id] = info

    def remove_table(self, info: TableInfo) -> list[TableBucket]:
        """Forgets a table with its partitions; returns the buckets it had."""
        self.tables.pop(info.table_path, None)
        self.tables_by_id.pop(info.table_id, None)
        self.lake_snapshots.pop(info.table_id, None)
        for pid in [p for p, e in self.partitions.items() if e.table_id == info.table_id]:
            del self.partitions[pid]
        return self.remove_buckets(lambda tb: tb.table_id == info.table_id)

    def remove_buckets(self, predicate) -> list[TableBucket]:
        gone = [tb for tb in self.leaders if predicate(tb)]
        for tb in gone:
            del self.leaders[tb]
            self.reassignments.pop(tb, None)
        for key in [k for k in self.assignments if predicate(TableBucket(k[0], 0, k[1]))]:
            del self.assignments[key]
        return gone

    def partitions_of(self, table_id: int) -> dict[str, PartitionEntry]:
        return {e.name: e for e in self.partitions.values() if e.table_id == table_id}

    def replicas(self, tb: TableBucket) -> list[int]:
        a = self.assignments.get((tb.table_id, tb.partition_id_or_none_value))
        return list(a.buckets.get(tb.bucket_id, [])) if a else []

    def buckets_of(self, table_id: int, partition_id: int) -> list[TableBucket]:
        """The buckets of a table (``partition_id`` -1) or of one partition, by bucket id. Read from its assignment
        (every bucket with a leader has one), so the cost is the table's buckets, not the cluster's: a metadata
        request for every table of a cluster stays linear in its buckets (bench.scale's ``metadata`` curve)."""
        assignment = self.assignments.get((table_id, partition_id))
        if assignment is None:
            return []
        buckets = (TableBucket(table_id, b, partition_id) for b in sorted(assignment.buckets))
        return [tb for tb in buckets if tb in self.leaders]

    def buckets_hosted_by(self, server_id: int) -> list[TableBucket]:
        return sorted(tb for tb in self.leaders if server_id in self.replicas(tb))


def membership_changes(known: dict[int, int], current: dict[int, int]) -> tuple[list[int], list[int]]:
    """``(lost, joined)`` tablet servers from the registrations the coordinator knows and the current ones (both
    id -> register_time). A server that restarted between two looks at the membership is in both lists: ZooKeeper
    may report its old node's removal and its new node's creation as one unchanged set of ids."""
    restarted = [sid for sid in known.keys() & current.keys() if known[sid] != current[sid]]
    lost = sorted(set(known) - set(current) | set(restarted))
    joined = sorted(set(current) - set(known) | set(restarted))
    return lost, joined
