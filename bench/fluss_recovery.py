"""KV recovery: how long a restarted tablet server takes to serve a primary-key bucket again, per 1M rows.

Own ``LocalCluster`` (1 coordinator, 1 tablet server, KV snapshots every ``SNAPSHOT_INTERVAL``), one table of
the benchmark rows with primary key ``seq``, 1 bucket, RF=1, filled with ``restart_rows`` rows (1M) through
``UpsertWriter.upsert_arrow_batch`` and waited on until a KV snapshot covers them. Then, per round:

1. ``kill -9`` of the tablet server (the PID the cluster started) and a wait until the coordinator has dropped
   its registration (the ZooKeeper session ends), so the restart does not wait for it;
2. ``kv.recovery``: the server is started again as is (its data directory intact);
   ``kv.recovery.snapshot``: the bucket's local KV directory is removed first (a replaced disk / new host), so
   the leader must download the KV snapshot and replay the changelog after it;
   ``kv.recovery.replay``: on a second cluster that takes no KV snapshot (interval 2h), the local KV directory
   is removed as well, so the leader rebuilds the whole state by replaying the changelog from the log;
3. the clock runs from the spawn of the new process until lookups of ``PROBE_KEYS`` keys (including the last
   one written) all return their rows. That includes starting the Python process, registering, the
   coordinator's leader election and opening the KV state. Seconds x 1M / rows. The probe asks for the
   bucket's leader every ``PROBE_INTERVAL_S`` and then looks the keys up (see ``_serving``).

The changelog rebuild (``kv.recovery.replay``) runs on ``recovery_rows`` rows (200k in quick mode).
The package's bytecode is compiled first (``compileall``), as installing a wheel does: a process started from
a source tree without ``__pycache__`` (e.g. under ``PYTHONDONTWRITEBYTECODE``) compiles every module it imports,
~0.35 s of CPU more per start on this machine.

Stages: the note gives the median seconds from the spawn to each line of the server's log that marks a stage
(``STAGES``: modules imported and the server built, registered in ZooKeeper, LeaderAndIsr received, KV state
ready), and the CPU the process had used when it started.

Which path the server took (local RocksDB or KV snapshot) and how many changelog records it replayed are read
from its log (``KvReplica.open``).

Raw limit (``raw`` / ``kv.recovery``): the same rows (8-byte keys, 42-byte values) in a RocksDB written and
closed beforehand, then opened with rocksdict and read back completely (iteration over every key and value):
what this machine needs to bring the same state back from disk and touch all of it once, per 1M rows.
"""

from __future__ import annotations

import asyncio
import compileall
import re
import shutil
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

import fluss
from bench.data import LOGICAL_ROW_BYTES, SCHEMA, make_batch
from bench.model import FAILED, Measurement, Profile
from bench.monitor import PeakRss
from bench.raw import KV_PUT_BATCH, _kv_keys_values
from fluss.server.cluster import LocalCluster
from fluss.server.logging_setup import parse_line

SERVER = 0
SNAPSHOT_INTERVAL = "1s"
CONFIG = {"kv.snapshot.interval": SNAPSHOT_INTERVAL}
NO_SNAPSHOT_CONFIG = {"kv.snapshot.interval": "2h"}  # none during the run: recovery replays the changelog
PROBE_KEYS = 50
PROBE_INTERVAL_S = 0.02
RECOVERY_TIMEOUT_S = 120.0
WRITE_CHUNK = 50_000
#: The stages of a restart in the tablet server's log (message prefixes): the Python process has imported its
#: modules and built the server, registered in ZooKeeper, received the LeaderAndIsr that makes it the leader (and
#: starts opening the KV state), and has the KV state ready.
STAGES = ("started", "registered", "leader", "kv ready")
_STARTING = re.compile(r"^tablet server \d+ starting \(pid \d+, ([\d.]+) s of CPU")
_SERVING = re.compile(r"^tablet server \d+ serving on ")
_READY = re.compile(r"^KV state of .* ready at offset \d+ \((\d+) changelog records replayed\)")


def _ts(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").timestamp()


def _open_report(log_text: str, since: int, spawned: float) -> dict:
    """What the restart logged in ``log_text[since:]``: the path taken (``source``), the changelog records replayed,
    the seconds from ``spawned`` (wall clock) to each stage, and the CPU the process had used when it started."""
    out: dict = {"source": "local RocksDB", "replayed": -1, "stages": {}, "start_cpu": None}
    for line in log_text[since:].splitlines():
        entry = parse_line(line)
        if entry is None:
            continue
        at, msg = _ts(entry.timestamp) - spawned, entry.message
        if m := _STARTING.match(msg):
            out["stages"]["started"], out["start_cpu"] = at, float(m.group(1))
        elif _SERVING.match(msg):
            out["stages"]["registered"] = at
        elif msg.startswith("opening the KV state of "):
            out["stages"]["leader"] = at
        elif msg.startswith("restoring ") and " from KV snapshot " in msg:
            out["source"] = "KV snapshot"
        elif m := _READY.match(msg):
            out["stages"]["kv ready"], out["replayed"] = at, int(m.group(1))
    return out


async def _fill(bootstrap: str, rows: int, wait_for_snapshot: bool = True) -> fluss.TablePath:
    """Creates the table and upserts ``rows`` rows; returns its path (once a KV snapshot covers them, if
    ``wait_for_snapshot``)."""
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    try:
        admin = conn.get_admin()
        await admin.create_database("bench", ignore_if_exists=True)
        path = fluss.TablePath("bench", "kv_recovery")
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["seq"]),
                                                             bucket_count=1,
                                                             properties={"table.replication.factor": "1"}))
        writer = (await conn.get_table(path)).new_upsert().create_writer()
        for start in range(0, rows, WRITE_CHUNK):
            writer.upsert_arrow_batch(make_batch(min(WRITE_CHUNK, rows - start), seed=start, start_seq=start))
        await writer.flush()
        await writer.aclose()
        end = (await admin.list_offsets(path, [0], fluss.OffsetSpec.latest()))[0]
        deadline = time.monotonic() + 60
        while wait_for_snapshot and await _snapshot_offset(conn, path) < end:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no KV snapshot reached log offset {end} within 60 s")
            await asyncio.sleep(0.3)
        return path
    finally:
        await conn.aclose()


async def _snapshot_offset(conn: fluss.FlussConnection, path: fluss.TablePath) -> int:
    from fluss.rpc.gen import fluss_api_pb2 as pb

    resp = await conn.run(conn.cluster.admin_call("GetLatestKvSnapshots",
                                                  pb.GetLatestKvSnapshotsRequest(table_path=path.to_pb())))
    return max((s.log_offset for s in resp.snapshots), default=-1)


async def _serving(bootstrap: str, path: fluss.TablePath, keys: list[int]) -> None:
    """Returns once every key of ``keys`` is found by a lookup. Until the bucket has a leader again, the probe asks
    the coordinator for the table's metadata every ``PROBE_INTERVAL_S`` (a lookup's own retries back off up to
    1 s, which would add up to a second of the client's waiting to the server's start); then it looks the keys
    up, retrying every ``PROBE_INTERVAL_S`` while the new leader still opens its KV state."""
    config = fluss.Config({"bootstrap.servers": bootstrap, "request-timeout": "2s", "lookup.batch-timeout": "1ms"})
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    conn = None
    try:
        while True:
            try:
                if conn is None:
                    conn = await fluss.FlussConnection.create(config)
                meta = await conn.run(conn.cluster.table(path, refresh=True))
                if conn.cluster.leader_address(meta, fluss.TableBucket(meta.info.table_id, 0)) is None:
                    raise fluss.FlussError("no leader yet", fluss.ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
                lookuper = (await conn.get_table(path)).new_lookup().create_lookuper()
                got = await asyncio.gather(*(lookuper.lookup({"seq": k}) for k in keys))
                await lookuper.aclose()
                if all(g is not None and g["seq"] == k for g, k in zip(got, keys, strict=True)):
                    return
                raise RuntimeError(f"lookups after recovery found {sum(g is not None for g in got)} of {len(keys)}")
            except fluss.FlussError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the bucket did not serve lookups within {RECOVERY_TIMEOUT_S}s") from None
                await asyncio.sleep(PROBE_INTERVAL_S)
    finally:
        if conn is not None:
            await conn.aclose()


def _kv_dirs(cluster: LocalCluster) -> list[Path]:
    data = cluster.dir / f"tablet-server-{SERVER}" / "data"
    return [p for p in data.rglob("kv") if p.is_dir()]


async def _rounds(cluster: LocalCluster, path: fluss.TablePath, rows: int, rounds: int, key: str,
                  drop_local: bool) -> Measurement:
    m = Measurement("fluss", key, "s", better="lower")
    probe = sorted({0, rows - 1, *range(0, rows, max(1, rows // PROBE_KEYS))})
    log_path = cluster.dir / "logs" / f"tablet-server-{SERVER}.log"
    seconds, sources, replays, cpus = [], set(), [], []
    stages: dict[str, list[float]] = {}
    peaks: dict[str, float] = {}
    for r in range(rounds + 1):  # round 0 warms up (page cache, the coordinator's first failover)
        cluster.kill_tablet_server(SERVER)
        await asyncio.to_thread(cluster.wait_for_tablet_servers, set(), 30)
        if drop_local:
            for d in _kv_dirs(cluster):
                shutil.rmtree(d)
        since = log_path.stat().st_size if log_path.exists() else 0
        spawned, t0 = time.time(), time.perf_counter()
        cluster.start_tablet_server(SERVER, wait=False)
        pid = cluster.tablet_server_pid(SERVER)
        with PeakRss({"tablet-server-0": pid}) as rss:
            await _serving(cluster.bootstrap_servers, path, probe)
        dt = time.perf_counter() - t0
        report = _open_report(log_path.read_text(), since, spawned)
        source = report["source"]
        if drop_local and source == "local RocksDB":
            source = "an empty store"  # no local state was left and no snapshot was restored
        if r:
            m.rounds.append(dt * 1e6 / rows)
            seconds.append(dt)
            sources.add(source)
            replays.append(report["replayed"])
            if report["start_cpu"] is not None:
                cpus.append(report["start_cpu"])
            for stage, at in report["stages"].items():
                stages.setdefault(stage, []).append(at)
            peaks = {k: max(v, peaks.get(k, 0.0)) for k, v in rss.peaks_mb().items()}
    m.rss_peak_mb = peaks
    timeline = ", ".join(f"{stage} {statistics.median(stages[stage]):.2f}" for stage in STAGES if stage in stages)
    cpu = f" ({statistics.median(cpus):.2f} s of CPU at the start)" if cpus else ""
    m.note = (f"{rows} rows in 1 bucket; restart->serving {min(seconds):.2f}-{max(seconds):.2f}s; from "
              f"{' / '.join(sorted(sources))} + {min(replays)}-{max(replays)} changelog records replayed; "
              f"median s after the spawn: {timeline}{cpu}, served {statistics.median(seconds):.2f}")
    return m


def measure_raw(rows: int, rounds: int) -> Measurement:
    """rocksdict: open a DB of ``rows`` rows written beforehand and iterate every key and value; s per 1M rows."""
    from rocksdict import Options, Rdict, WriteBatch

    m = Measurement("raw", "kv.recovery", "s", better="lower",
                    note=f"rocksdict: open a RocksDB of the same {rows} rows ({LOGICAL_ROW_BYTES}-byte values) "
                         "and read every row back, per 1M rows")
    work = Path(tempfile.mkdtemp(prefix="bench-raw-recovery-"))
    try:
        keys, vals = _kv_keys_values(rows)
        db = Rdict(str(work / "db"), Options(raw_mode=True))
        for start in range(0, rows, KV_PUT_BATCH):
            wb = WriteBatch(raw_mode=True)
            for i in range(start, min(rows, start + KV_PUT_BATCH)):
                wb.put(keys[i], vals[i])
            db.write(wb)
        db.close()
        with PeakRss({}) as rss:
            for r in range(rounds + 1):
                t0 = time.perf_counter()
                db = Rdict(str(work / "db"), Options(raw_mode=True))
                n = sum(1 for _ in db.items())
                db.close()
                dt = time.perf_counter() - t0
                if n != rows:
                    raise RuntimeError(f"read {n} of {rows} rows back")
                if r:
                    m.rounds.append(dt * 1e6 / rows)
        m.rss_peak_mb = rss.peaks_mb()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return m


#: (cluster config, KV snapshots awaited after the fill, the Profile field with its rows, the variants run on
#: that cluster: (key, drop local KV)). The restart and the snapshot recovery run on 1M rows in both modes (goal: a
#: restarted server serves a 1M-row bucket within 2 s); the changelog rebuild on ``recovery_rows``.
CLUSTERS = (
    (CONFIG, True, "restart_rows", (("kv.recovery", False), ("kv.recovery.snapshot", True))),
    (NO_SNAPSHOT_CONFIG, False, "recovery_rows", (("kv.recovery.replay", True),)),
)


def _compile_bytecode() -> None:
    """Writes the ``__pycache__`` of the ``fluss`` package, as a wheel's installation does (see the docstring)."""
    compileall.compile_dir(str(Path(fluss.__path__[0])), quiet=1, workers=1)


async def _run(profile: Profile) -> list[Measurement]:
    await asyncio.to_thread(_compile_bytecode)
    out: list[Measurement] = []
    for config, snapshots, rows_field, variants in CLUSTERS:
        rows = getattr(profile, rows_field)
        with LocalCluster(tablet_servers=1, server_config=config, zookeeper_session_timeout="2s") as cluster:
            t0 = time.monotonic()
            try:
                path = await _fill(cluster.bootstrap_servers, rows, wait_for_snapshot=snapshots)
            except Exception as e:  # reported for each variant, the run goes on
                out += [Measurement("fluss", key, "s", status=FAILED, note=f"fill: {type(e).__name__}: {e}")
                        for key, _ in variants]
                continue
            print(f"  recovery fill {rows} rows: {time.monotonic() - t0:.1f}s", flush=True)
            for key, drop_local in variants:
                t0 = time.monotonic()
                try:
                    out.append(await _rounds(cluster, path, rows, profile.heavy_rounds, key, drop_local))
                except Exception as e:  # one variant failing must not hide the others
                    out.append(Measurement("fluss", key, "s", status=FAILED, note=f"{type(e).__name__}: {e}"))
                print(f"  fluss {key}: {time.monotonic() - t0:.1f}s", flush=True)
    return out


def run(profile: Profile) -> list[Measurement]:
    """The raw limit, then the recovery variants (local, snapshot; changelog replay on a second cluster)."""
    return [measure_raw(profile.restart_rows, profile.rounds)] + asyncio.run(_run(profile))
