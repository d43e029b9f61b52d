"""The `make demo` walk-through of the streamhouse, with real processes all the way:

1. a local cluster (ZooKeeper, a coordinator, three tablet servers) with a Paimon lake (a local warehouse);
2. Flink SQL (PyFlink, the Fluss catalog): lake-enabled tables, a `datagen` statement set and a lookup join
   (``sql/streamhouse/1_tables.sql``, ``2_ingest.sql``);
3. the tiering job (``python -m tiering_job --once``, a PyFlink job) copies the tables into Paimon and commits
   the lake snapshots to the coordinator;
4. fresh data after the tiering: more orders, an UPDATE and a DELETE (``3_fresh_data.sql``), in Fluss only;
5. Union Read: per table, the lake-only and log-only counts next to the union, checked against what was written,
   then the same through Flink SQL (``SELECT COUNT(*)`` of the table and of its ``$lake`` half);
6. the tiered log: older log segments of ``orders`` were uploaded to ``remote.data.dir`` and deleted locally
   (``fluss table describe`` shows both halves); reading the log from ``earliest`` goes through the remote segments
   into the local log.

``--s3`` (``make demo S3=1``) puts ``remote.data.dir`` (tiered log, KV snapshots) and the Paimon warehouse on a
real S3 API: moto's server on loopback (``fluss/fs/local_s3.py``), with Fluss's ``s3.*`` options.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fluss
from fluss.cli.common import progress
from fluss.lake.union_read import latest_lake_snapshot_or_none, read_lake, read_log_after, union_read
from fluss.server.cluster import LocalCluster
from fluss.table_report import describe_table

ROOT = Path(__file__).resolve().parent.parent
SQL = ROOT / "sql" / "streamhouse"
DATABASE = "streamhouse"
ORDERS_FIRST, ORDERS_MORE = 20_000, 5_000


def batch_session(bootstrap: str):
    """A batch-mode PyFlink session with the Fluss connector and catalog (``fluss.flink.sql.SqlSession``)."""
    from pyflink.java_gateway import get_gateway

    from fluss.flink.sql import SqlSession

    session = SqlSession(bootstrap, mode="batch", config={"parallelism.default": "2", "rest.bind-port": "0"},
                         out=io.StringIO())
    # Paimon's S3 file IO (Hadoop's S3A) logs every stream it opens to the console: keep its errors only
    jvm = get_gateway().jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel("org.apache.hadoop",
                                                                    jvm.org.apache.logging.log4j.Level.ERROR)
    return session


def run_sql(bootstrap: str, *files: str) -> None:
    """Runs the streamhouse SQL scripts in one PyFlink session; prints each job as it finishes."""
    from fluss.flink.sql import split_statements

    session = batch_session(bootstrap)
    for name in files:
        for statement in split_statements((SQL / name).read_text()):
            t0 = time.perf_counter()
            if statement.upper().startswith("SET "):
                session.execute(statement)  # SET is the SQL client's statement: the session handles it
                continue
            head = " ".join(statement.split())[:96]
            with progress() as bar:  # a spinner on a terminal while the job runs
                bar.add_task(head[:60], total=None)
                result = session.t_env.execute_sql(statement)
                if result.get_job_client() is not None:
                    result.wait()
            if not head.upper().startswith("CREATE TEMPORARY"):
                print(f"  [{time.perf_counter() - t0:5.1f}s] {head}")


def flink_counts(bootstrap: str) -> None:
    """The same tables through Flink SQL: a batch read is a union read; ``t$lake`` is the lake alone."""
    session = batch_session(bootstrap)
    for name in ("orders", "enriched_orders"):
        counts = []
        for table in (f"`{name}$lake`", name):
            result = session.t_env.execute_sql(f"SELECT COUNT(*) FROM {DATABASE}.{table}")
            with result.collect() as rows:
                counts.append(next(iter(rows))[0])
        print(f"  Flink SQL: {name}$lake has {counts[0]:,} rows; {name} (union read) has {counts[1]:,} rows")


def run_tiering_job(bootstrap: str) -> None:
    """One round of the tiering job, as its own PyFlink process (the way an operator runs it)."""
    t0 = time.perf_counter()
    with progress() as bar:
        bar.add_task("tiering job (PyFlink) running", total=None)
        done = subprocess.run([sys.executable, "-m", "tiering_job", "--bootstrap-servers", bootstrap, "--once"],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"tiering job failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    for line in done.stdout.splitlines():
        result = json.loads(line)
        print(f"  {result.get('table')}: {result.get('rows', 0):>6} rows -> lake snapshot "
              f"{result.get('snapshot_id')}  {result.get('error') or result.get('skipped') or ''}")
    print(f"  tiering job finished in {time.perf_counter() - t0:.1f}s")


async def report(bootstrap: str) -> None:
    """Union read of each lake-enabled table, with its lake-only and log-only halves, checked."""
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    admin = conn.get_admin()
    expected = {"orders": ORDERS_FIRST + ORDERS_MORE, "enriched_orders": ORDERS_FIRST + ORDERS_MORE - 1}
    print(f"  {'table':<16} {'lake only':>10} {'log only':>10} {'union read':>11} {'expected':>9}")
    ok = True
    for name, want in expected.items():
        path = fluss.TablePath(DATABASE, name)
        info = await admin.get_table_info(path)
        snapshot = await latest_lake_snapshot_or_none(conn, path)
        lake = await read_lake(conn, path)
        log_rows, _ = await read_log_after(conn, info, snapshot)
        union = await union_read(conn, path)
        ok &= union.num_rows == want
        print(f"  {name:<16} {lake.num_rows:>10,} {log_rows.num_rows:>10,} {union.num_rows:>11,} {want:>9,}")
        if name == "enriched_orders":
            keys = union.column("order_key").to_pylist()
            row7 = union.filter(union.column("order_key").to_numpy() == 7).to_pylist()
            print(f"  enriched_orders key 7 (updated after tiering): cust_name={row7[0]['cust_name']!r}; "
                  f"key 8 (deleted after tiering) present: {8 in keys}")
            ok &= row7[0]["cust_name"] == "renamed" and 8 not in keys
    await conn.aclose()
    print("  (lake only: rows in the Paimon snapshot; log only: changelog records after it, so an UPDATE counts\n"
          "   twice (-U, +U) and a DELETE once (-D); union read: the lake merged with those changes by key)")
    print("\n  union read equals what was written" if ok else "\n  MISMATCH: union read differs from the input")
    if not ok:
        sys.exit(1)


async def tiered_log(bootstrap: str) -> None:
    """The orders log: its buckets' local and remote halves, and a read of the whole log from ``earliest``."""
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    path = fluss.TablePath(DATABASE, "orders")
    info = await conn.get_admin().get_table_info(path)
    print("\n".join("  " + line for line in (await describe_table(conn, path)).splitlines()
                    if not line.startswith(("  ", "columns", "properties"))))
    scanner = await (await conn.get_table(path)).new_scan().project([0]).create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(info.num_buckets)})
    t0 = time.perf_counter()
    rows = (await scanner.to_arrow()).num_rows
    latest = await conn.get_admin().list_offsets(path, list(range(info.num_buckets)), fluss.OffsetSpec.latest())
    print(f"  read from earliest (remote segments, then the local log): {rows:,} records of "
          f"{sum(latest.values()):,} in {time.perf_counter() - t0:.1f}s")
    await conn.aclose()
    if rows != sum(latest.values()):
        sys.exit("MISMATCH: the log read from earliest misses records")


def main() -> None:
    from fluss.flink.jvm_output import drain_gateway_stderr

    drain_gateway_stderr()  # the PyFlink JVM's warnings to a log file, its Hadoop INFO lines off the console
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--s3", action="store_true", help="remote storage and the lake on a local S3 API (moto)")
    args = parser.parse_args()
    demo_dir = Path(tempfile.mkdtemp(prefix="fluss-streamhouse-"))
    s3 = None
    # small segments and a short remote-log interval, so the demo's log is tiered while it runs
    config = {"log.segment.file-size": "32kb", "remote.log.task-interval-duration": "2s",
              "kv.snapshot.interval": "10s", "datalake.format": "paimon"}
    if args.s3:
        from fluss.fs.local_s3 import LocalS3Server

        s3 = LocalS3Server(log_path=demo_dir / "moto.log", owner_pid=os.getpid()).start()
        s3.create_bucket("fluss")
        config.update({"remote.data.dir": "s3://fluss/remote", "datalake.paimon.warehouse": "s3://fluss/lake",
                       **s3.options()})
        where = f"S3 API at {s3.endpoint} (moto): remote.data.dir s3://fluss/remote, warehouse s3://fluss/lake"
    else:
        config["datalake.paimon.warehouse"] = str(demo_dir / "paimon-warehouse")
        where = f"Paimon warehouse {config['datalake.paimon.warehouse']}"
    print("== 1. local cluster: ZooKeeper, 1 coordinator, 3 tablet servers;", where)
    try:
        with LocalCluster(tablet_servers=3, directory=demo_dir / "cluster", server_config=config) as cluster:
            bootstrap = cluster.bootstrap_servers
            print(f"  bootstrap.servers = {bootstrap}")
            print("\n== 2. Flink SQL: lake-enabled tables, datagen statement set, lookup join")
            run_sql(bootstrap, "1_tables.sql", "2_ingest.sql")
            print("\n== 3. tiering job: Fluss -> Paimon, lake snapshots committed to the coordinator")
            run_tiering_job(bootstrap)
            print("\n== 4. fresh data, in the Fluss log only: 5,000 orders, an UPDATE, a DELETE")
            run_sql(bootstrap, "3_fresh_data.sql")
            print("\n== 5. union read = lake snapshot + log after it")
            asyncio.run(report(bootstrap))
            flink_counts(bootstrap)
            print("\n== 6. tiered log: older segments in remote storage, the tail on the tablet servers")
            asyncio.run(tiered_log(bootstrap))
    finally:
        if s3 is not None:
            s3.stop()
        shutil.rmtree(demo_dir, ignore_errors=True)
    print("\nCluster stopped.")


if __name__ == "__main__":
    main()
