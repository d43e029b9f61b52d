"""Flink SQL through the connector jar: a bounded ``INSERT INTO fluss_table SELECT * FROM datagen`` and a bounded
read of that table, next to the same jobs with Flink's own ``datagen`` / ``blackhole`` connectors.

The parent (``run``) starts a ``LocalCluster`` (1 coordinator, 3 tablet servers) and runs this module as a
subprocess (``python -m bench.flink_sql --child ...``), so PyFlink's JVM (a local mini cluster, parallelism
``PARALLELISM``, batch mode) is gone afterwards. The child gets a copy of the connector jar (and of the ``lib/``
directory beside it) through ``FLUSS_CONNECTOR_JAR``, so a rebuild of ``connector/`` during the run cannot pull
the jar from under a running JVM. The copy is on the class path of the child's PyFlink JVM (``HADOOP_CLASSPATH``,
which PyFlink's launcher adds to it): Flink's ``lib/`` way of installing a connector, the way Flink's own
``datagen`` and ``blackhole`` are installed, so ``add_connector_jars`` ships nothing with the jobs and no job loads
the connector's classes (gRPC, Netty, protobuf, Arrow) into a class loader of its own.

Round 0 is a warm-up of all three jobs with as many rows as a counted round (class loading and the JIT compiling
the connector's, datagen's and blackhole's hot paths), so both sides are measured at the JVM's steady state, as the
Kafka peer is. With a warm-up of a tenth of the rows the first counted INSERT ran at 0.39-0.54 of datagen ->
blackhole against 0.50-0.70 after a full one. Whichever job runs first in a round runs slower (by about 10% in runs
of either order, 2026-12-03; the JVM's compiler threads are busy through the whole run, which is the likely cause,
and a 2 s pause before each job did not remove it), so the counted rounds are an even number (``heavy_rounds``
rounded up) and the INSERT and datagen -> blackhole take turns going first (docs/benchmarks.md, round ten).
Per counted round:

- ``flink.insert``: ``INSERT INTO c.bench.t_<r> SELECT * FROM gen``, where ``gen`` is a bounded ``datagen``
  table (``number-of-rows`` = ``flink_rows``) with the benchmark's 10 columns (strings of 3 characters) and
  ``c`` a Fluss catalog; ``t_<r>`` has 3 buckets, RF=1. Raw limit ``flink.insert.blackhole``: the same
  ``SELECT * FROM gen`` into a ``blackhole`` table.
- ``flink.read``: ``INSERT INTO blackhole SELECT * FROM c.bench.t_<r>`` (the bounded source: every bucket up
  to the offsets at job start). Raw limit ``flink.read.datagen``: ``datagen`` into ``blackhole``, i.e. the same
  job as ``flink.insert.blackhole`` (measured once, recorded under both keys).

rows/s = rows / the job's net run time as Flink reports it (``JobExecutionResult.getNetRuntime``: from the
job's submission to the mini cluster until it finished, without the client's planning). The parent checks
with the Python client that each table holds ``flink_rows`` rows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.model import FAILED, Measurement, Profile
from bench.monitor import PeakRss

PARALLELISM = 2
BUCKETS = 3
CHILD_TIMEOUT_S = 900.0
UNTHROTTLED = 10**12  # datagen emits 10,000 rows/s unless told otherwise
RESULT_MARK = "BENCH-FLINK-RESULT "
REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("ts BIGINT, seq BIGINT, i0 INT, i1 INT, f0 FLOAT, f1 FLOAT, h0 SMALLINT, h1 SMALLINT, "
           "s0 STRING, s1 STRING")


# ---------------------------------------------------------------- the child: PyFlink jobs

def counted_rounds(heavy_rounds: int) -> int:
    """Counted rounds: ``heavy_rounds`` made even, so the INSERT and datagen -> blackhole go first equally often."""
    return heavy_rounds + heavy_rounds % 2


def job_order(r: int, insert: tuple, blackhole: tuple, read: tuple) -> list[tuple]:
    """The jobs of round ``r``: the first job of a round runs slower (~10%), so the INSERT goes first
    in odd rounds and datagen -> blackhole in even ones; the read follows the insert whose table it reads."""
    return [insert, blackhole, read] if r % 2 else [blackhole, insert, read]


def _job(t_env, sql: str, pids: dict[str, int]) -> tuple[float, float, dict[str, float]]:
    """Runs one INSERT job to its end; (net run time s, wall time s, peak RSS MiB by process)."""
    with PeakRss(pids) as rss:
        rss.add_descendants("flink", os.getpid())  # PyFlink's JVM
        t0 = time.perf_counter()
        result = t_env.execute_sql(sql)
        job = result.get_job_client().get_job_execution_result().result()
        wall = time.perf_counter() - t0
    return job.get_net_runtime() / 1000.0, wall, rss.peaks_mb()


def child(bootstrap: str, rows: int, rounds: int, server_pids: dict[str, int], database: str = "bench") -> dict:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    from fluss.flink import add_connector_jars

    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    config = t_env.get_config()
    config.set("parallelism.default", str(PARALLELISM))
    config.set("table.exec.resource.default-parallelism", str(PARALLELISM))
    config.set("rest.bind-port", "0")
    add_connector_jars(t_env)
    t_env.execute_sql(f"CREATE CATALOG c WITH ('type'='fluss', 'bootstrap.servers'='{bootstrap}')").wait()
    t_env.execute_sql(f"CREATE DATABASE IF NOT EXISTS c.{database}").wait()
    t_env.execute_sql(f"CREATE TEMPORARY TABLE gen ({COLUMNS}) WITH ('connector'='datagen', "
                      f"'number-of-rows'='{rows}', 'rows-per-second'='{UNTHROTTLED}', 'fields.s0.length'='3', "
                      "'fields.s1.length'='3')").wait()
    t_env.execute_sql(f"CREATE TEMPORARY TABLE sink ({COLUMNS}) WITH ('connector'='blackhole')").wait()
    out: dict[str, list] = {"flink.insert": [], "flink.insert.blackhole": [], "flink.read": []}
    for r in range(rounds + 1):
        t_env.execute_sql(f"CREATE TABLE c.{database}.t_{r} ({COLUMNS}) WITH ('bucket.num'='{BUCKETS}', "
                          "'table.replication.factor'='1')").wait()
        insert = ("flink.insert", f"INSERT INTO c.{database}.t_{r} SELECT * FROM gen")
        blackhole = ("flink.insert.blackhole", "INSERT INTO sink SELECT * FROM gen")
        read = ("flink.read", f"INSERT INTO sink SELECT * FROM c.{database}.t_{r}")  # reads what the insert wrote
        for key, sql in job_order(r, insert, blackhole, read):
            net, wall, rss = _job(t_env, sql, {"client": os.getpid(), **server_pids})
            out[key].append({"round": r, "net_s": net, "wall_s": wall, "rss_peak_mb": rss})
    return out


# ---------------------------------------------------------------- the parent

def _measurements(result: dict, rows: int) -> list[Measurement]:
    notes = {
        "flink.insert": f"INSERT INTO fluss (3 buckets, RF=1) SELECT * FROM datagen, {rows} rows",
        "flink.insert.blackhole": f"INSERT INTO blackhole SELECT * FROM datagen, {rows} rows",
        "flink.read": f"bounded read of the {rows}-row Fluss table INTO blackhole",
    }
    out = []
    for key, runs in result.items():
        counted = [x for x in runs if x["round"] > 0]
        system = "fluss" if key in ("flink.insert", "flink.read") else "raw"
        m = Measurement(system, key, "rows/s", [rows / x["net_s"] for x in counted])
        wall = [rows / x["wall_s"] for x in counted]
        m.note = (f"{notes[key]}; parallelism {PARALLELISM}, batch mode; job net run time "
                  f"(with client planning: {min(wall):,.0f}-{max(wall):,.0f} rows/s)")
        for x in counted:
            m.rss_peak_mb = {k: max(v, m.rss_peak_mb.get(k, 0.0)) for k, v in x["rss_peak_mb"].items()}
        out.append(m)
        if key == "flink.insert.blackhole":  # datagen -> blackhole is also the limit of the read
            out.append(Measurement("raw", "flink.read.datagen", "rows/s", list(m.rounds),
                                   note="the same datagen -> blackhole job as flink.insert.blackhole",
                                   rss_peak_mb=dict(m.rss_peak_mb)))
    return out


async def _check_rows(bootstrap: str, rounds: int, rows: int) -> None:
    import fluss

    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    try:
        admin = conn.get_admin()
        for r in range(rounds + 1):
            ends = await admin.list_offsets(fluss.TablePath("bench", f"t_{r}"), list(range(BUCKETS)),
                                            fluss.OffsetSpec.latest())
            if sum(ends.values()) != rows:
                raise RuntimeError(f"bench.t_{r} holds {sum(ends.values())} rows, the job inserted {rows}")
    finally:
        await conn.aclose()


def _copy_connector(target: Path) -> Path:
    """The connector jar and its ``lib/`` directory copied into ``target``; returns the jar's copy."""
    from fluss.flink import connector_jar

    jar = Path(connector_jar())
    shutil.copy2(jar, target / jar.name)
    if (jar.parent / "lib").is_dir():
        shutil.copytree(jar.parent / "lib", target / "lib")
    return target / jar.name


def _failure(text: str) -> str:
    """The most telling line of a failed child's output (its last exception), else its tail."""
    lines = [ln.strip() for ln in text.splitlines() if re.search(r"(Error|Exception)\b", ln)]
    return (lines[-1] if lines else text[-300:].replace("\n", " "))[:300]


def run(profile: Profile) -> list[Measurement]:
    """Starts a cluster, runs the PyFlink jobs in a subprocess, checks the tables, stops the cluster."""
    from bench.fluss_log import server_pids
    from fluss.flink import connector_lib_jars
    from fluss.server.cluster import LocalCluster

    rows, rounds = profile.flink_rows, counted_rounds(profile.heavy_rounds)
    with (tempfile.TemporaryDirectory(prefix="bench-flink-") as work, LocalCluster(tablet_servers=3) as cluster,
          tempfile.TemporaryFile("w+") as log):
        jar = _copy_connector(Path(work))
        env = {**os.environ, "FLUSS_CONNECTOR_JAR": str(jar),
               "HADOOP_CLASSPATH": os.pathsep.join(filter(None, [str(jar), *connector_lib_jars(str(jar)),
                                                                 os.environ.get("HADOOP_CLASSPATH")]))}
        pids = {k: v for k, v in server_pids(cluster).items() if v}
        cmd = [sys.executable, "-m", "bench.flink_sql", "--child", "--bootstrap", cluster.bootstrap_servers,
               "--rows", str(rows), "--rounds", str(rounds), "--pids", json.dumps(pids)]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=CHILD_TIMEOUT_S, env=env)
        log.seek(0)
        text = log.read()
        print(f"  flink jobs: {time.monotonic() - t0:.1f}s", flush=True)
        line = next((ln for ln in text.splitlines() if ln.startswith(RESULT_MARK)), None)
        if proc.returncode != 0 or line is None:
            return [Measurement("fluss", "flink", "", status=FAILED,
                                note=f"PyFlink child exited {proc.returncode}: {_failure(text)}")]
        out = _measurements(json.loads(line[len(RESULT_MARK):]), rows)
        try:
            asyncio.run(_check_rows(cluster.bootstrap_servers, rounds, rows))
        except Exception as e:  # a figure for rows that did not arrive is not a figure
            return [Measurement("fluss", "flink", "", status=FAILED, note=f"{type(e).__name__}: {e}")] + \
                [m for m in out if m.system == "raw"]
        return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.flink_sql", description=__doc__)
    parser.add_argument("--child", action="store_true", required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--pids", default="{}")
    parser.add_argument("--database", default="bench", help="the Fluss database of the tables (a new one per run)")
    args = parser.parse_args()
    result = child(args.bootstrap, args.rows, args.rounds, json.loads(args.pids), args.database)
    print(RESULT_MARK + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
