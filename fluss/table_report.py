"""What ``fluss table list`` and ``fluss table describe`` print: the tables of a cluster, and one table's
definition with the live state of its buckets (leader, replicas, in-sync replicas, log start and end offsets, and
the local and remote (tiered) log's offsets and sizes) and its row count, as an operator wants to see them;
:func:`describe_table_json` gives the same as one JSON object for scripts (``fluss table describe --json``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from fluss.errors import ErrorCode, FlussError
from fluss.lake.partitions import bucket_keys, current_partitions, list_bucket_offsets
from fluss.metadata import NO_PARTITION, OffsetSpec, TableBucket, TableInfo, TablePath
from fluss.rpc.errors import to_error
from fluss.rpc.gen import fluss_api_pb2 as pb

#: The offsets shown per bucket: log start and log end (the high watermark).
_SPECS = (OffsetSpec.earliest(), OffsetSpec.latest())


@dataclass(frozen=True)
class BucketState:
    """One bucket (of one partition) as the cluster reports it now."""

    partition: str | None
    bucket: int
    leader: int
    replicas: list[int]
    isr: list[int]
    log_start: int
    log_end: int
    log: LogState | None = None


@dataclass(frozen=True)
class LogState:
    """A bucket's local log and remote (tiered) log, from its leader (DescribeLog)."""

    partition_id: int
    bucket: int
    local_start: int
    local_end: int
    high_watermark: int
    local_size: int
    local_segments: int
    remote_start: int  # -1: nothing in remote storage
    remote_end: int
    remote_size: int
    remote_segments: int
    kv_size: int = 0  # a primary-key bucket's RocksDB bytes on its leader


async def log_states(conn, info: TableInfo, partitions: dict[int, str] | None = None) -> list[LogState]:
    """The local and remote log of every bucket (of every partition given) of the table."""
    if partitions is None:
        partitions = await current_partitions(conn.get_admin(), info)
    return await conn.run(_describe_logs(conn.cluster, info, partitions))


async def _describe_logs(client, info: TableInfo, partitions: dict[int, str]) -> list[LogState]:
    path = info.table_path
    for attempt in range(20):
        if partitions:
            await client.update_metadata([path], partitions=[(path, n) for n in partitions.values()])
        meta = await client.table(path, refresh=True)
        pids = sorted(partitions) if info.is_partitioned() else [None]
        by_leader: dict[str, list[TableBucket]] = {}
        for pid in pids:
            for b in range(meta.bucket_count(pid)):  # a partition's own count
                tb = TableBucket(info.table_id, b, pid)
                by_leader.setdefault(client.leader_address(meta, tb) or "", []).append(tb)
        if "" not in by_leader:
            try:
                out: list[LogState] = []
                for address, tbs in by_leader.items():
                    resp = await client.tablet_call(address, "DescribeLog", pb.DescribeLogRequest(
                        table_id=info.table_id, buckets=[pb.TableStatsBucketPb(
                            partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id) for tb in tbs]))
                    for r in resp.buckets:
                        err = to_error(r.error)
                        if err is not None:
                            raise err
                        out.append(LogState(r.partition_id, r.bucket_id, r.local_log_start_offset,
                                            r.local_log_end_offset, r.high_watermark, r.local_log_size,
                                            r.local_segment_count, r.remote_log_start_offset,
                                            r.remote_log_end_offset, r.remote_log_size, r.remote_segment_count,
                                            r.kv_size))
                return out
            except FlussError as e:
                if not e.is_retriable:
                    raise
        await asyncio.sleep(0.1 * attempt)
    raise FlussError(f"Could not describe the log of '{path}': bucket leaders unavailable",
                     ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)


async def table_names(conn, database: str | None = None) -> list[str]:
    """``database.table`` of every table (of one database), sorted."""
    admin = conn.get_admin()
    databases = [database] if database else sorted(await admin.list_databases())
    return [f"{db}.{t}" for db in databases for t in sorted(await admin.list_tables(db))]


async def bucket_states(conn, info: TableInfo) -> list[BucketState]:
    """Leader, replicas, ISR and offsets of every bucket (every partition's) of the table."""
    admin = conn.get_admin()
    path = info.table_path
    partitions = await current_partitions(admin, info)  # {partition id: name}; empty when not partitioned
    resp = await conn.run(conn.cluster.update_metadata([path], partitions=[(path, n) for n in partitions.values()]))
    layout = {(NO_PARTITION, b.bucket_id): b for t in resp.tables for b in t.buckets}
    layout.update({(p.partition_id, b.bucket_id): b for p in resp.partitions for b in p.buckets})
    counts = {p.partition_id: p.bucket_count for p in resp.partitions if p.bucket_count}  # each partition's own
    start, end = await asyncio.gather(*(list_bucket_offsets(admin, info, partitions, spec, counts)
                                        for spec in _SPECS))
    logs = {(s.partition_id, s.bucket): s for s in await log_states(conn, info, partitions)}
    out = []
    for key in sorted(bucket_keys(info, partitions, counts), key=lambda k: (partitions.get(k[0], ""), k[1])):
        if key not in start or key not in end:
            continue  # a partition dropped meanwhile
        meta = layout.get(key)
        out.append(BucketState(partitions.get(key[0]), key[1], meta.leader_id if meta else -1,
                               list(meta.replicas) if meta else [], list(meta.isr) if meta else [],
                               start[key], end[key], logs.get(key)))
    return out


async def describe_table(conn, path: TablePath) -> str:
    """The table's definition, its buckets' state and its row count, as text."""
    admin = conn.get_admin()
    info = await admin.get_table_info(path)
    kind = "primary-key table" if info.has_primary_key() else "log table"
    lines = [f"{path} ({kind}, id {info.table_id}, schema {info.schema_id})", "columns:"]
    pks = set(info.get_primary_keys())
    for column in info.row_schema.columns:  # the SQL type text, as `fluss table create --schema` takes it
        lines.append(f"  {column.name} {column.data_type}{'  [primary key]' if column.name in pks else ''}")
    if pks:
        lines.append(f"primary key: {', '.join(info.get_primary_keys())}")
    if info.is_partitioned():
        lines.append(f"partitioned by: {', '.join(info.get_partition_keys())}")
    bucket_keys = info.get_bucket_keys()
    lines.append(f"buckets: {info.num_buckets}" + (" (of partitions created from now on; each partition keeps its "
                                                   "own count)" if info.is_partitioned() else "")
                 + (f" (bucket key: {', '.join(bucket_keys)})" if bucket_keys else ""))
    lines.append("properties:")
    lines += [f"  {k} = {v}" for k, v in sorted(info.get_properties().items())] or ["  (none)"]
    states = await bucket_states(conn, info)
    lines.append(f"rows: {(await admin.get_table_stats(path)).row_count}")
    lines.append(_bucket_table(states, info.is_partitioned()))
    return "\n".join(lines)


async def describe_table_json(conn, path: TablePath) -> dict:
    """The table's definition and every bucket's state as a JSON-ready dict (keys documented in
    docs/cluster-operations.md)."""
    info = await conn.get_admin().get_table_info(path)
    return {**table_definition(info), "rows": (await conn.get_admin().get_table_stats(path)).row_count,
            "buckets": [bucket_json(s) for s in await bucket_states(conn, info)]}


def table_definition(info: TableInfo) -> dict:
    return {"table": str(info.table_path), "table_id": info.table_id, "schema_id": info.schema_id,
            "kind": "primary_key" if info.has_primary_key() else "log",
            "columns": [{"name": c.name, "type": str(c.data_type)} for c in info.row_schema.columns],
            "primary_key": list(info.get_primary_keys()), "partition_keys": list(info.get_partition_keys()),
            "bucket_count": info.num_buckets, "bucket_keys": list(info.get_bucket_keys()),
            "properties": dict(sorted(info.get_properties().items()))}


def bucket_json(s: BucketState) -> dict:
    """One bucket: placement (leader -1: none), the offsets a reader sees, and its local and remote log (null when
    the leader did not answer; remote offsets -1 when nothing is tiered)."""
    lg = s.log
    return {"partition": s.partition, "bucket": s.bucket, "leader": s.leader, "replicas": s.replicas, "isr": s.isr,
            "log_start_offset": s.log_start, "log_end_offset": s.log_end,
            "local_log": None if lg is None else {"start_offset": lg.local_start, "end_offset": lg.local_end,
                                                   "high_watermark": lg.high_watermark, "size": lg.local_size,
                                                   "segments": lg.local_segments},
            "remote_log": None if lg is None else {"start_offset": lg.remote_start, "end_offset": lg.remote_end,
                                                    "size": lg.remote_size, "segments": lg.remote_segments}}


def _bucket_table(states: list[BucketState], partitioned: bool) -> str:
    """One row per bucket: placement, the offsets a reader sees (log start = the remote start when tiered, log
    end = the high watermark), then the local log and the remote log with their sizes."""
    header = (["partition"] if partitioned else []) + [
        "bucket", "leader", "replicas", "isr", "log start", "log end", "local start", "local end", "local size",
        "local segs", "remote start", "remote end", "remote size", "remote segs"]
    rows = []
    for s in states:
        lg = s.log
        local = [str(lg.local_start), str(lg.local_end), _size(lg.local_size), str(lg.local_segments)] if lg else \
            ["?"] * 4
        remote = ([str(lg.remote_start), str(lg.remote_end), _size(lg.remote_size), str(lg.remote_segments)]
                  if lg is not None and lg.remote_start >= 0 else ["-"] * 4)
        rows.append(([s.partition or ""] if partitioned else [])
                    + [str(s.bucket), str(s.leader) if s.leader >= 0 else "none", ",".join(map(str, s.replicas)),
                       ",".join(map(str, s.isr)), str(s.log_start), str(s.log_end)] + local + remote)
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*r).rstrip() for r in [header, *rows])


def _size(size: int) -> str:
    """``12.3MB`` (binary units)."""
    value, unit = float(size), "B"
    for next_unit in ("KB", "MB", "GB", "TB"):
        if value < 1024:
            break
        value, unit = value / 1024, next_unit
    return f"{int(value)}B" if unit == "B" else f"{value:.1f}{unit}"
