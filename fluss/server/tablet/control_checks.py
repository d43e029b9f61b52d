"""Checks of the coordinator's control requests against ZooKeeper, before a tablet server acts on them.

NotifyLeaderAndIsr and StopReplica change what a tablet server leads, follows and stores, so the server trusts
no such request on its word (anyone who reaches the port can send one; authentication of the internal listener
comes with the security work). A request is acted on only where ZooKeeper, which the coordinator writes before
it notifies, agrees:

* **Coordinator epoch**: equal to ``/coordinators/epoch``. A lower one is a deposed coordinator; a higher one is
  nobody's (it would fence the real coordinator off for good).
* **Tables**: the table node at the info's path carries the info's table id. The server then uses the
  definition from ZooKeeper (schema, properties), never the one in the request.
* **Partitions**: the partition node under that table exists with that partition id.
* **Buckets** (NotifyLeaderAndIsr): ``leader_isr`` names the same leader and leader epoch; the server applies
  ZooKeeper's ISR and bucket epoch and the assignment's replicas. A lower leader epoch is a stale notification
  (a newer one follows), anything else is refused as contradicting ZooKeeper.
* **Nothing remote yet** (NotifyLeaderAndIsr, for the buckets the server asks about: those it is to lead and does
  not host yet, or hosts with an empty log): ZooKeeper's leader epoch is 0, the bucket's first leader term, so no leader before this one
  uploaded anything, and the bucket node has neither a ``remote_log_manifest`` nor a ``kv_snapshot`` child, so
  nothing was committed. Such a new leader (of a new table or partition) starts with an empty remote log and no
  KV snapshot without asking the coordinator for them, one RPC each per bucket. One more pipelined read per such
  bucket.
* **StopReplica**: the bucket's assignment is gone (its table or partition was dropped) or no longer lists this
  server (the bucket was reassigned to other servers); a bucket assigned here is never stopped or deleted on
  request. Only a bucket whose assignment is gone loses its remote log with ``delete``: a moved bucket's remote
  log is the other replicas' too.

ZooKeeper is read once per request (pipelined reads) in a worker thread. When it cannot be reached the request
fails with NETWORK_EXCEPTION, which the coordinator's notifier retries.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.coordinator.context import table_info_of
from fluss.server.zk import paths
from fluss.server.zk.client import ZooKeeperClient, zookeeper_errors
from fluss.server.zk.data import PartitionRegistration, decode


@dataclass
class CheckedLeaderAndIsr:
    """What of a NotifyLeaderAndIsr request ZooKeeper confirms."""

    tables: dict[int, TableInfo] = field(default_factory=dict)
    partition_names: dict[int, str] = field(default_factory=dict)
    # each partition's bucket count, as its assignment in ZooKeeper has it (the write routing check uses it)
    partition_bucket_counts: dict[int, int] = field(default_factory=dict)
    buckets: list[pb.LeaderAndIsrPb] = field(default_factory=list)  # as recorded in ZooKeeper
    # of the buckets asked about: those in their first leader term with nothing remote committed (module docstring)
    nothing_remote: set[TableBucket] = field(default_factory=set)
    refused: dict[TableBucket, FlussError] = field(default_factory=dict)


class ControlRequestChecker:
    def __init__(self, zk: ZooKeeperClient, server_id: int) -> None:
        self.zk = zk
        self.server_id = server_id
        self._tables: dict[int, TableInfo] = {}  # verified definitions, by table id

    async def check_coordinator_epoch(self, epoch: int) -> None:
        current = await self._zk_call(self.zk.get_coordinator_epoch)
        if epoch != current:
            raise FlussError(f"Request from coordinator epoch {epoch}, but the current coordinator epoch in "
                             f"ZooKeeper is {current}", ErrorCode.INVALID_COORDINATOR_EXCEPTION)

    async def leader_and_isr(self, req: pb.NotifyLeaderAndIsrRequest, known_tables: dict[int, TableInfo],
                             new_leaders: frozenset[TableBucket] = frozenset()) -> CheckedLeaderAndIsr:
        """``new_leaders``: the buckets whose remote state to look up (``nothing_remote``)."""
        return await self._zk_call(self._leader_and_isr, req, known_tables, new_leaders)

    async def stop_replicas(self, req: pb.StopReplicaRequest
                            ) -> tuple[dict[TableBucket, FlussError], set[TableBucket]]:
        """The buckets of the request that must not be stopped, with why; and those that still exist elsewhere
        (reassigned away from this server: their remote log stays)."""
        return await self._zk_call(self._stop_replicas, req)

    async def _zk_call(self, fn, *args):
        with zookeeper_errors("check the request against ZooKeeper"):
            return await asyncio.to_thread(fn, *args)

    # ------------------------------------------------------------ in a worker thread

    def _leader_and_isr(self, req: pb.NotifyLeaderAndIsrRequest, known_tables: dict[int, TableInfo],
                        new_leaders: frozenset[TableBucket] = frozenset()) -> CheckedLeaderAndIsr:
        out = CheckedLeaderAndIsr()
        table_errors: dict[int, FlussError] = {}
        for t in req.table_infos:
            try:
                out.tables[t.table_id] = self._table(t)
            except FlussError as e:
                table_errors[t.table_id] = e
        tables = {**known_tables, **out.tables}
        partition_names = {p.partition_id: p.partition_name for p in req.partition_infos}
        candidates: list[tuple[TableBucket, pb.LeaderAndIsrPb]] = []
        problems = self._partition_problems(req, tables, table_errors, partition_names)
        for b in req.buckets:
            tb = TableBucket(b.table_id, b.bucket_id, b.partition_id)
            error = table_errors.get(b.table_id)
            if error is None and b.table_id not in tables:
                error = FlussError(f"NotifyLeaderAndIsr for {tb} carries no definition of table {b.table_id}",
                                   ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
            if error is None and tb.partition_id is not None:
                error = problems[(b.table_id, tb.partition_id)]
                if error is None:
                    out.partition_names[tb.partition_id] = partition_names[tb.partition_id]
            if error is not None:
                out.refused[tb] = error
            else:
                candidates.append((tb, b))
        keys = [(tb.table_id, tb.partition_id_or_none_value, tb.bucket_id) for tb, _ in candidates]
        owners = sorted({(t, p) for t, p, _ in keys})
        assignments = dict(zip(owners, self.zk.get_assignments(owners), strict=True))
        first_terms: list[TableBucket] = []
        for (tb, b), lai in zip(candidates, self.zk.get_leaders_and_isr(keys), strict=True):
            assignment = assignments[(tb.table_id, tb.partition_id_or_none_value)]
            replicas = None if assignment is None else assignment.buckets.get(tb.bucket_id)
            if assignment is not None and tb.partition_id is not None:
                out.partition_bucket_counts[tb.partition_id] = len(assignment.buckets)
            if lai is None or replicas is None:
                out.refused[tb] = FlussError(f"{tb} is not in ZooKeeper (dropped?)",
                                             ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
            elif b.leader_epoch < lai.leader_epoch:
                out.refused[tb] = FlussError(
                    f"Stale notification for {tb}: leader epoch {b.leader_epoch}, ZooKeeper has {lai.leader_epoch}",
                    ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION)
            elif b.leader_epoch != lai.leader_epoch or b.leader != lai.leader:
                out.refused[tb] = FlussError(
                    f"Notification for {tb} (leader {b.leader}, leader epoch {b.leader_epoch}) contradicts "
                    f"ZooKeeper (leader {lai.leader}, leader epoch {lai.leader_epoch})",
                    ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION)
            else:
                out.buckets.append(pb.LeaderAndIsrPb(
                    table_id=b.table_id, partition_id=b.partition_id, bucket_id=b.bucket_id, leader=lai.leader,
                    leader_epoch=lai.leader_epoch, replicas=replicas, isr=lai.isr, bucket_epoch=lai.bucket_epoch))
                if tb in new_leaders and lai.leader == self.server_id and lai.leader_epoch == 0:
                    first_terms.append(tb)
        if first_terms:
            keys = [(tb.table_id, tb.partition_id_or_none_value, tb.bucket_id) for tb in first_terms]
            out.nothing_remote = {tb for tb, free in zip(first_terms, self.zk.without_remote_state(keys), strict=True)
                                  if free}
        return out

    def _table(self, t: pb.TableInfoPb) -> TableInfo:
        cached = self._tables.get(t.table_id)
        if cached is not None and cached.modified_time == t.modified_time:
            return cached
        path = TablePath.from_pb(t.table_path)
        got = None
        if _is_node_name(path.database_name) and _is_node_name(path.table_name):
            try:
                got = self.zk.get_table(path.database_name, path.table_name)
            except (ValueError, TypeError, KeyError):  # not a table node (a forged path): no such table
                got = None
        if got is None or got[0].table_id != t.table_id:
            raise FlussError(f"Table {path} with id {t.table_id} is not in ZooKeeper",
                             ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        info = table_info_of(path, *got)
        self._tables[t.table_id] = info
        return info

    def _partition_problems(self, req: pb.NotifyLeaderAndIsrRequest, tables: dict[int, TableInfo],
                            table_errors: dict[int, FlussError], names: dict[int, str]
                            ) -> dict[tuple[int, int], FlussError | None]:
        """What is wrong with each partition the request's buckets name (None: it is in ZooKeeper as named), its
        partition node read once per partition, all with pipelined reads (a notification of 1,000 one-bucket
        partitions read them one at a time before)."""
        wanted: dict[tuple[int, int], str | None] = {}
        for b in req.buckets:
            partition_id = TableBucket(b.table_id, b.bucket_id, b.partition_id).partition_id
            if partition_id is not None and b.table_id in tables and b.table_id not in table_errors:
                wanted.setdefault((b.table_id, partition_id), names.get(partition_id))
        readable = [(key, name) for key, name in wanted.items() if name is not None and _is_node_name(name)]
        raw = self.zk.get_many([paths.partition(tables[t].table_path.database_name, tables[t].table_path.table_name,
                                                name) for (t, _p), name in readable])
        stored = dict(zip([key for key, _ in readable], raw, strict=True))
        out = {}
        for (table_id, partition_id), name in wanted.items():
            reg = None
            if stored.get((table_id, partition_id)) is not None:
                try:
                    reg = decode(PartitionRegistration, stored[(table_id, partition_id)])
                except (ValueError, TypeError, KeyError):  # not a partition node
                    reg = None
            out[(table_id, partition_id)] = self._partition_problem(tables[table_id], partition_id, name, reg)
        return out

    @staticmethod
    def _partition_problem(table: TableInfo, partition_id: int, name: str | None,
                           reg: PartitionRegistration | None) -> FlussError | None:
        path = table.table_path
        if reg is None or reg.partition_id != partition_id or reg.table_id != table.table_id:
            return FlussError(f"Partition {name!r} (id {partition_id}) of {path} is not in ZooKeeper",
                              ErrorCode.PARTITION_NOT_EXISTS)
        return None

    def _stop_replicas(self, req: pb.StopReplicaRequest) -> tuple[dict[TableBucket, FlussError], set[TableBucket]]:
        owners = sorted({(b.table_id, b.partition_id) for b in req.buckets})
        assignments = dict(zip(owners, self.zk.get_assignments(owners), strict=True))
        refused, moved = {}, set()
        for b in req.buckets:
            tb = TableBucket(b.table_id, b.bucket_id, b.partition_id)
            assignment = assignments[(b.table_id, b.partition_id)]
            replicas = None if assignment is None else assignment.buckets.get(b.bucket_id)
            if replicas is not None and self.server_id in replicas:
                refused[tb] = FlussError(f"{tb} is assigned to tablet server {self.server_id} in ZooKeeper: "
                                         "it is not stopped", ErrorCode.INELIGIBLE_REPLICA_EXCEPTION)
            elif replicas is not None:
                moved.add(tb)
        return refused, moved


def _is_node_name(name: str) -> bool:
    """Whether ``name`` can be one znode name (a forged request may carry '', '..', or names with '/')."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\x00" not in name
