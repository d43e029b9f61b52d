"""What the dashboard's pages show, as JSON-ready dicts: the cluster overview, the tables, and one table with its
buckets. Cluster state comes from the client's public API (and ``GetLatestKvSnapshots`` through the connection's
cluster client); sizes, rates and health gauges from the sampler's latest scrapes (``sampler.py``).

* Coordinators: each bootstrap address is asked ``GetServerNodes``; the active one answers, a standby answers
  ``INVALID_COORDINATOR_EXCEPTION``, anything else is down.
* ZooKeeper: each server's ``zookeeper_sessionState`` gauge.
* A bucket's size is its leader's ``logicalStorage`` series; KV snapshots are cached for ``KV_SNAPSHOT_TTL_S`` (the
  coordinator reads one znode per bucket for them).
"""

from __future__ import annotations

import asyncio
import time

import grpc

from fluss.errors import ErrorCode, FlussError
from fluss.lake.config import is_lake_enabled
from fluss.metadata import TableInfo, TablePath
from fluss.metrics.scrape import Scrape
from fluss.rpc.channels import ChannelFactory
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.table_report import bucket_states

KV_SNAPSHOT_TTL_S = 10.0
_TS = "fluss_tabletserver_"
_CS = "fluss_coordinator_"


def probe_coordinator(address: str, timeout_s: float = 2.0) -> str:
    """``active``, ``standby`` or ``down`` (blocking; run it in a thread)."""
    try:
        with ChannelFactory().sync_channel(address) as channel:
            resp = rpc.AdminServiceStub(channel).GetServerNodes(pb.GetServerNodesRequest(), timeout=timeout_s)
    except grpc.RpcError:
        return "down"
    if resp.error.code == 0:
        return "active"
    return "standby" if resp.error.code == ErrorCode.INVALID_COORDINATOR_EXCEPTION else "down"


def _zk_state(s: Scrape | None, scope: str) -> str | None:
    if s is None:
        return None
    for sample in s.series(f"fluss_{scope}_zookeeper_sessionState"):
        if sample.value == 1:
            return sample.labels.get("state")
    return None


def _num(value: float | None) -> float | None:
    return None if value is None else float(value)


class ClusterViews:
    def __init__(self, conn, sampler, bootstrap_servers: str) -> None:
        self.conn = conn
        self.admin = conn.get_admin()
        self.sampler = sampler
        self.bootstrap = [a.strip() for a in bootstrap_servers.split(",") if a.strip()]
        self._infos: dict[TablePath, TableInfo] = {}
        self._kv_snapshots: dict[int, tuple[float, dict]] = {}

    # ------------------------------------------------------------ overview

    async def overview(self) -> dict:
        states = await asyncio.gather(*(asyncio.to_thread(probe_coordinator, a) for a in self.bootstrap))
        nodes = list(self.sampler.nodes) or await self.admin.get_server_nodes()
        latest, errors = self.sampler.latest, self.sampler.errors
        coordinator = next((n for n in nodes if n.server_type == "CoordinatorServer"), None)
        cs = latest.get(coordinator.uid) if coordinator else None
        coordinators = [{"address": a, "state": state,
                         "id": coordinator.id if coordinator and state == "active" else None,
                         "zookeeper": _zk_state(cs, "coordinator") if state == "active" else None}
                        for a, state in zip(self.bootstrap, states, strict=True)]
        servers = []
        for n in sorted((n for n in nodes if n.server_type == "TabletServer"), key=lambda n: n.id):
            s = latest.get(n.uid)
            servers.append({
                "id": n.id, "address": n.address,
                "metrics": f"{n.host}:{n.metrics_port}" if n.metrics_port else None,
                "scrape_error": errors.get(n.uid),
                "leaders": _num(s.value(_TS + "leaderCount")) if s else None,
                "replicas": _num(s.value(_TS + "replicaCount")) if s else None,
                "under_replicated": _num(s.value(_TS + "underReplicated")) if s else None,
                "under_min_isr": _num(s.value(_TS + "underMinIsr")) if s else None,
                "log_size": _num(s.value(_TS + "logicalStorage_logSize")) if s else None,
                "kv_size": _num(s.value(_TS + "logicalStorage_kvSize")) if s else None,
                "zookeeper": _zk_state(s, "tabletserver"),
            })
        totals = {
            "tables": _num(cs.value(_CS + "tableCount")) if cs else None,
            "partitions": _num(cs.value(_CS + "partitionCount")) if cs else None,
            "buckets": _num(cs.value(_CS + "bucketCount")) if cs else None,
            "offline_buckets": _num(cs.value(_CS + "offlineBucketCount")) if cs else None,
            "tablet_servers": len(servers),
            "under_replicated": sum(s["under_replicated"] or 0 for s in servers) if latest else None,
        }
        if totals["tables"] is None:  # no coordinator metrics: count from the catalog
            totals["tables"] = float(len(await self._table_paths()))
        zk_states = [c["zookeeper"] for c in coordinators if c["zookeeper"]] + \
            [s["zookeeper"] for s in servers if s["zookeeper"]]
        return {"now": time.time(), "bootstrap_servers": ",".join(self.bootstrap), "coordinators": coordinators,
                "tablet_servers": servers, "totals": totals, "metrics": bool(latest),
                "zookeeper": {"sessions": len(zk_states), "connected": sum(1 for z in zk_states if z == "connected")},
                "samples": self.sampler.samples}

    # ------------------------------------------------------------ tables

    async def _table_paths(self) -> list[TablePath]:
        out = []
        for db in sorted(await self.admin.list_databases()):
            out += [TablePath(db, t) for t in sorted(await self.admin.list_tables(db))]
        return out

    async def _info(self, path: TablePath, refresh: bool = False) -> TableInfo:
        info = self._infos.get(path)
        if info is None or refresh:
            info = self._infos[path] = await self.admin.get_table_info(path)
        return info

    async def tables(self) -> dict:
        paths = await self._table_paths()
        for gone in set(self._infos) - set(paths):
            del self._infos[gone]
        infos = await asyncio.gather(*(self._info(p) for p in paths))
        rates = self.sampler.table_rates()
        sizes = self._table_sizes()
        rows = []
        for info in infos:
            key = (info.table_path.database_name, info.table_path.table_name)
            records_in, bytes_out = rates.get(key, (0.0, 0.0))
            rows.append({
                "database": key[0], "table": key[1], "id": info.table_id,
                "kind": "primary key" if info.has_primary_key() else "log",
                "buckets": info.num_buckets, "partitioned": info.is_partitioned(),
                "replication": info.get_properties().get("table.replication.factor"),
                "lake": is_lake_enabled(info), "records_in_per_s": records_in, "bytes_out_per_s": bytes_out,
                "log_size": sizes.get(key),
            })
        return {"now": time.time(), "tables": rows}

    def _table_sizes(self) -> dict[tuple[str, str], float]:
        """Bytes of every table's logs, leaders and followers together (bucket-level series)."""
        out: dict[tuple[str, str], float] = {}
        for s in self.sampler.latest.values():
            for sample in s.series(_TS + "table_bucket_logicalStorage_logSize"):
                key = (sample.labels.get("database", ""), sample.labels.get("table", ""))
                out[key] = out.get(key, 0.0) + sample.value
        return out

    async def table(self, database: str, name: str) -> dict:
        path = TablePath(database, name)
        info = await self._info(path, refresh=True)
        states = await bucket_states(self.conn, info)
        sizes = self._bucket_sizes(database, name)
        snapshots = await self._kv_snapshot_map(info, {s.partition for s in states}) if info.has_primary_key() else {}
        lake = await self._lake(info)
        now_ms = time.time() * 1000
        buckets = []
        for s in states:
            key = (s.partition or "", s.bucket)
            log_size, kv_size = sizes.get((s.leader, *key), (None, None))
            snap = snapshots.get(key)
            tiered = lake["offsets"].get(key) if lake else None
            buckets.append({
                "partition": s.partition, "bucket": s.bucket, "leader": s.leader, "replicas": s.replicas, "isr": s.isr,
                "in_sync": sorted(s.isr) == sorted(s.replicas), "start_offset": s.log_start, "end_offset": s.log_end,
                "log_size": log_size, "kv_size": kv_size,
                "kv_snapshot": None if snap is None else {
                    "id": snap["id"], "log_offset": snap["log_offset"], "age_s": (now_ms - snap["create_time"]) / 1000},
                "tiered_offset": tiered, "tier_lag": None if lake is None else max(0, s.log_end - (tiered or 0)),
            })
        try:
            rows = (await self.admin.get_table_stats(path)).row_count
        except FlussError:
            rows = None
        return {
            "now": time.time(), "database": database, "table": name, "id": info.table_id,
            "kind": "primary key" if info.has_primary_key() else "log",
            "columns": [{"name": c.name, "type": str(c.data_type), "primary_key": c.name in info.get_primary_keys()}
                        for c in info.row_schema.columns],  # the SQL type text
            "partition_keys": info.get_partition_keys(), "bucket_keys": info.get_bucket_keys(),
            "properties": dict(sorted(info.get_properties().items())), "rows": rows, "buckets": buckets,
            "lake": None if lake is None else {"snapshot_id": lake["snapshot_id"], "age_s": lake["age_s"],
                                              "tier_lag": sum(b["tier_lag"] or 0 for b in buckets)},
            "series": self.sampler.table_series(database, name),
        }

    def _bucket_sizes(self, database: str, name: str) -> dict[tuple, tuple[float | None, float | None]]:
        """``(server id, partition, bucket) -> (log size, kv size)`` from every server's bucket-level series."""
        out: dict[tuple, list] = {}
        for uid, s in self.sampler.latest.items():
            if not uid.startswith("ts-"):
                continue
            server = int(uid[3:])
            for metric, slot in (("logSize", 0), ("kvSize", 1)):
                for sample in s.series(_TS + f"table_bucket_logicalStorage_{metric}", database=database, table=name):
                    key = (server, sample.labels.get("partition", ""), int(sample.labels.get("bucket", -1)))
                    out.setdefault(key, [None, None])[slot] = sample.value
        return {k: (v[0], v[1]) for k, v in out.items()}

    async def _kv_snapshot_map(self, info: TableInfo, partitions: set[str | None]) -> dict[tuple[str, int], dict]:
        cached = self._kv_snapshots.get(info.table_id)
        if cached is not None and time.monotonic() - cached[0] < KV_SNAPSHOT_TTL_S:
            return cached[1]
        out: dict[tuple[str, int], dict] = {}
        for partition in sorted(partitions, key=lambda p: p or ""):
            req = pb.GetLatestKvSnapshotsRequest(table_path=info.table_path.to_pb(), partition_name=partition or "")
            try:
                resp = await self.conn.run(self.conn.cluster.admin_call("GetLatestKvSnapshots", req))
            except FlussError:
                continue
            for snap in resp.snapshots:
                out[(partition or "", snap.bucket_id)] = {"id": snap.snapshot_id, "log_offset": snap.log_offset,
                                                          "create_time": snap.create_time}
        self._kv_snapshots[info.table_id] = (time.monotonic(), out)
        return out

    async def _lake(self, info: TableInfo) -> dict | None:
        if not is_lake_enabled(info):
            return None
        try:
            snapshot = await self.admin.get_latest_lake_snapshot(info.table_path)
        except FlussError:
            return {"snapshot_id": None, "age_s": None, "offsets": {}}
        names = dict(snapshot.partition_names)
        if info.is_partitioned() and not names:
            names = {p.partition_id: p.partition_name for p in await self.admin.list_partition_infos(info.table_path)}
        offsets: dict[tuple[str, int], int] = {}
        for tb, offset in snapshot.table_buckets_offset.items():
            offsets[(names.get(tb.partition_id, "") if tb.partition_id is not None else "", tb.bucket_id)] = offset
        age = (time.time() * 1000 - snapshot.commit_time) / 1000 if snapshot.commit_time else None
        return {"snapshot_id": snapshot.snapshot_id, "age_s": age, "offsets": offsets}

