"""The metadata curves: table creation time, metadata request latency, and tablet-server memory per bucket.

``create``: a log table of N buckets (RF=1), and an auto-partitioned table (``DAY``, ``num-precreate`` P, 1 bucket
per partition: the coordinator creates the P partitions within the CREATE TABLE), timed twice: until the create
call returns, and until the table is usable: every bucket has a leader in the metadata *and* that leader answers a
``ListOffsets`` for it (it has received the NotifyLeaderAndIsr and opened the replica).

``metadata``: tables of ``metadata_buckets`` buckets are created until the cluster holds 1 .. 100 of them (each
gets 1,000 rows, so every bucket has a segment); at each step the p50/p99 of ``GetMetadata`` for one table (what a
client sends when it opens a table or a leader moved) and for every table at once, one request at a time.

``rss``: at the same steps, the resident memory (VmRSS) of each tablet server and of the coordinator, against the
buckets the cluster hosts; the slope (least squares) is the memory per bucket.
"""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa

import fluss
from bench.data import SCHEMA, make_batch
from bench.monitor import cpu_seconds, read_status_kb
from bench.scale.curve import Curve, percentile
from bench.scale.sizes import ScaleProfile
from bench.scale.throughput import DATABASE, create_log_table, settle
from fluss.errors import FlussError
from fluss.metadata import TableBucket
from fluss.rpc.gen import fluss_api_pb2 as pb

READY_TIMEOUT_S = 300.0
PARTITION_SCHEMA = fluss.Schema(SCHEMA.append(pa.field("dt", pa.string())))  # partitioned by dt


async def _not_ready(conn: fluss.FlussConnection, path: fluss.TablePath, pending: set[TableBucket],
                     partitions: dict[int, str]) -> set[TableBucket]:
    """The buckets of ``pending`` whose leader is unknown or does not answer ``ListOffsets`` for them yet."""
    client = conn.cluster
    refs = [(path, name) for name in partitions.values()]
    await conn.run(client.update_metadata([path], partitions=refs))
    meta = client.tables[path]
    by_call: dict[tuple[str, int], list[TableBucket]] = {}
    missing: set[TableBucket] = set()
    for tb in pending:
        address = client.leader_address(meta, tb)
        if address is None:
            missing.add(tb)
        else:
            by_call.setdefault((address, tb.partition_id_or_none_value), []).append(tb)

    async def ask(address: str, pid: int, tbs: list[TableBucket]) -> set[TableBucket]:
        request = pb.ListOffsetsRequest(follower_id=-1, offset_type=fluss.OffsetSpec.latest().kind, timestamp=0,
                                        table_id=meta.info.table_id, partition_id=pid,
                                        bucket_ids=[tb.bucket_id for tb in tbs])
        try:
            resp = await conn.run(client.tablet_call(address, "ListOffsets", request, timeout_s=10))
        except FlussError:
            return set(tbs)
        ok = {r.bucket_id for r in resp.buckets if not r.error.code}
        return {tb for tb in tbs if tb.bucket_id not in ok}

    for bad in await asyncio.gather(*(ask(a, pid, tbs) for (a, pid), tbs in by_call.items())):
        missing |= bad
    return missing


async def wait_usable(conn: fluss.FlussConnection, path: fluss.TablePath, buckets: int, partitions: int = 0) -> None:
    """Returns once every bucket (of every one of ``partitions`` partitions, if any) has a leader that serves it."""
    admin = conn.get_admin()
    deadline = time.monotonic() + READY_TIMEOUT_S
    names: dict[int, str] = {}
    while partitions and len(names) < partitions:  # auto-partitions may still be on their way
        names = {p.partition_id: p.partition_name for p in await admin.list_partition_infos(path)}
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} has {len(names)} of {partitions} partitions")
        if len(names) < partitions:
            await asyncio.sleep(0.01)
    table_id = (await admin.get_table_info(path)).table_id
    pending = {TableBucket(table_id, b, pid) for pid in (names or [None]) for b in range(buckets)}
    while pending:
        pending = await _not_ready(conn, path, pending, names)
        if pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(pending)} buckets of {path} not served after {READY_TIMEOUT_S}s")
            await asyncio.sleep(0.005)


async def _timed_create(conn: fluss.FlussConnection, path: fluss.TablePath, desc: fluss.TableDescriptor,
                        buckets: int, partitions: int = 0) -> tuple[float, float]:
    """(seconds until ``create_table`` returned, seconds until the table was usable), both from the call."""
    admin = conn.get_admin()
    await admin.drop_table(path, ignore_if_not_exists=True)
    t0 = time.perf_counter()
    await admin.create_table(path, desc)
    returned = time.perf_counter() - t0
    await wait_usable(conn, path, buckets, partitions)
    return returned, time.perf_counter() - t0


async def create_curves(bootstrap: str, profile: ScaleProfile, pids: list[int]) -> list[Curve]:
    by_buckets = Curve("create_buckets", "CREATE TABLE of N buckets (3 tablet servers, RF=1)", "buckets")
    by_partitions = Curve("create_partitions", "CREATE TABLE with N auto-partitions (1 bucket each, RF=1)",
                          "partitions")
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    try:
        admin = conn.get_admin()
        await admin.create_database(DATABASE, ignore_if_exists=True)
        for buckets in profile.create_buckets:
            path = fluss.TablePath(DATABASE, f"create_{buckets}")
            desc = fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=buckets,
                                         properties={"table.replication.factor": "1"})
            await settle(pids)  # the servers are done with the previous step (its DROP TABLE)
            returned, usable = await _timed_create(conn, path, desc, buckets)
            await admin.drop_table(path)
            by_buckets.x.append(buckets)
            by_buckets.series_of("create call returns", "ms").add([returned * 1000])
            by_buckets.series_of("usable (every leader serves)", "ms").add([usable * 1000])
            print(f"  create {buckets} buckets: {returned * 1000:.0f} ms returned, {usable * 1000:.0f} ms usable",
                  flush=True)
        for partitions in profile.create_partitions:
            path = fluss.TablePath(DATABASE, f"create_p{partitions}")
            desc = fluss.TableDescriptor(PARTITION_SCHEMA, partition_keys=["dt"], bucket_count=1, properties={
                "table.replication.factor": "1", "table.auto-partition.enabled": "true",
                "table.auto-partition.time-unit": "DAY", "table.auto-partition.num-precreate": str(partitions),
                "table.auto-partition.num-retention": "1"})
            await settle(pids)
            returned, usable = await _timed_create(conn, path, desc, 1, partitions)
            await admin.drop_table(path)
            by_partitions.x.append(partitions)
            by_partitions.series_of("create call returns", "ms").add([returned * 1000])
            by_partitions.series_of("usable (every leader serves)", "ms").add([usable * 1000])
            print(f"  create {partitions} partitions: {returned * 1000:.0f} ms returned, {usable * 1000:.0f} ms "
                  "usable", flush=True)
    finally:
        await conn.aclose()
    by_buckets.notes.append("one measurement per size; usable = every bucket's leader answers ListOffsets")
    by_partitions.notes.append("table.auto-partition.num-precreate = N, time-unit DAY: the coordinator creates the "
                               "partitions inside the CREATE TABLE; usable = every partition's bucket is served")
    return [by_buckets, by_partitions]


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ``ys`` over ``xs`` (None with fewer than two distinct x)."""
    if len(set(xs)) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


async def _metadata_latencies(conn: fluss.FlussConnection, paths: list[fluss.TablePath], requests: int,
                              all_tables: bool, coordinator: int) -> tuple[list[float], float, float]:
    """(ms of each request, coordinator CPU ms per request, client CPU ms per request): CPU per request is far
    steadier than the latency on a shared machine."""
    out = []
    server0, client0 = cpu_seconds(coordinator), time.process_time()
    for i in range(requests):
        wanted = paths if all_tables else [paths[i % len(paths)]]
        t0 = time.perf_counter()
        await conn.run(conn.cluster.update_metadata(wanted))
        out.append((time.perf_counter() - t0) * 1000)
    server_ms = (cpu_seconds(coordinator) - server0) * 1000 / requests
    return out, server_ms, (time.process_time() - client0) * 1000 / requests


async def metadata_curves(bootstrap: str, profile: ScaleProfile, pids: dict[str, int]) -> list[Curve]:
    per = profile.metadata_buckets
    meta = Curve("metadata", f"Metadata request latency vs tables of {per} buckets (3 tablet servers)", "tables")
    rss = Curve("rss", "Server memory (RSS) vs buckets hosted (3 tablet servers, RF=1)", "buckets in the cluster")
    tablets = {n: p for n, p in pids.items() if n.startswith("tablet-server")}

    def sample_rss(buckets: int) -> None:
        rss.x.append(buckets)
        total = 0.0
        for name, pid in tablets.items():
            mb = (read_status_kb(pid, "VmRSS") or 0) / 1024
            total += mb
            rss.series_of(name, "MiB").add([mb])
        rss.series_of("tablet servers (sum)", "MiB").add([total])
        rss.series_of("coordinator", "MiB").add([(read_status_kb(pids["coordinator"], "VmRSS") or 0) / 1024])

    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    paths: list[fluss.TablePath] = []
    try:
        admin = conn.get_admin()
        await admin.create_database(DATABASE, ignore_if_exists=True)
        await asyncio.sleep(1.0)
        sample_rss(0)
        rows = make_batch(1000)
        create_ms: list[float] = []
        for tables in profile.metadata_tables:
            while len(paths) < tables:
                t0 = time.perf_counter()
                path = await create_log_table(admin, f"meta_{len(paths)}", per)
                create_ms.append((time.perf_counter() - t0) * 1000)
                writer = (await conn.get_table(path)).new_append().create_writer()
                writer.write_arrow_batch(rows)
                await writer.flush()
                await writer.aclose()
                paths.append(path)
            one = await _metadata_latencies(conn, paths, profile.metadata_requests, False, pids["coordinator"])
            every = await _metadata_latencies(conn, paths, max(10, profile.metadata_requests // 4), True,
                                              pids["coordinator"])
            meta.x.append(tables)
            for kind, (lat, server_ms, client_ms) in (("one table", one), ("all tables", every)):
                meta.series_of(f"{kind} p50", "ms").add([percentile(lat, 50)])
                meta.series_of(f"{kind} p99", "ms").add([percentile(lat, 99)])
                meta.series_of(f"{kind}: coordinator CPU per request", "CPU ms").add([server_ms])
                meta.series_of(f"{kind}: client CPU per request", "CPU ms").add([client_ms])
            meta.series_of("create table (mean of the step)", "ms").add(
                [sum(create_ms) / len(create_ms)] if create_ms else [])
            create_ms = []
            sample_rss(tables * per)
            print(f"  metadata {tables} tables: one p99 {meta.series['one table p99'].values[-1]:.2f} ms, all p99 "
                  f"{meta.series['all tables p99'].values[-1]:.2f} ms; tablet RSS "
                  f"{rss.series['tablet servers (sum)'].values[-1]:.0f} MiB", flush=True)
        for path in paths:
            await admin.drop_table(path)
    finally:
        await conn.aclose()
    meta.notes.append(f"{profile.metadata_requests} one-table requests (rotating over the tables) and "
                      f"{max(10, profile.metadata_requests // 4)} all-table requests per step, one at a time, timed "
                      "in the client (GetMetadata round trip + building the client's metadata cache)")
    per_bucket = slope(rss.x, rss.series["tablet servers (sum)"].values)
    if per_bucket is not None:
        rss.notes.append(f"tablet servers: {per_bucket * 1024:.1f} KiB per bucket (least-squares slope); each bucket "
                         "holds 1,000 rows in one segment")
    coordinator = slope(rss.x, rss.series["coordinator"].values)
    if coordinator is not None:
        rss.notes.append(f"coordinator: {coordinator * 1024:.1f} KiB per bucket")
    return [meta, rss]
