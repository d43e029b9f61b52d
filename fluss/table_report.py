"""What ``fluss table list`` and ``fluss table describe`` print: the tables of a cluster, and one table's
definition with the live state of its buckets (leader, replicas, in-sync replicas, log start and end offsets)
and its row count, as an operator wants to see them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from fluss.lake.partitions import bucket_keys, current_partitions, list_bucket_offsets
from fluss.metadata import NO_PARTITION, OffsetSpec, TableInfo, TablePath

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
    start, end = await asyncio.gather(*(list_bucket_offsets(admin, info, partitions, spec) for spec in _SPECS))
    out = []
    for key in sorted(bucket_keys(info, partitions), key=lambda k: (partitions.get(k[0], ""), k[1])):
        if key not in start or key not in end:
            continue  # a partition dropped meanwhile
        meta = layout.get(key)
        out.append(BucketState(partitions.get(key[0]), key[1], meta.leader_id if meta else -1,
                               list(meta.replicas) if meta else [], list(meta.isr) if meta else [],
                               start[key], end[key]))
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
    lines.append(f"buckets: {info.num_buckets}" + (f" (bucket key: {', '.join(bucket_keys)})" if bucket_keys else ""))
    lines.append("properties:")
    lines += [f"  {k} = {v}" for k, v in sorted(info.get_properties().items())] or ["  (none)"]
    states = await bucket_states(conn, info)
    lines.append(f"rows: {(await admin.get_table_stats(path)).row_count}")
    lines.append(_bucket_table(states, info.is_partitioned()))
    return "\n".join(lines)


def _bucket_table(states: list[BucketState], partitioned: bool) -> str:
    header = (["partition"] if partitioned else []) + ["bucket", "leader", "replicas", "isr", "log start", "log end"]
    rows = [([s.partition or ""] if partitioned else [])
            + [str(s.bucket), str(s.leader) if s.leader >= 0 else "none", ",".join(map(str, s.replicas)),
               ",".join(map(str, s.isr)), str(s.log_start), str(s.log_end)] for s in states]
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*r).rstrip() for r in [header, *rows])
