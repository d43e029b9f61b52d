"""The lake tiering job: a PyFlink pipeline that tiers lake-enabled Fluss tables into Paimon.

Pipeline (one Flink job)::

    table tasks ──rebalance──► TierTable (parallelism N) ──► ReportLakeSnapshot (p 1) ──► LakeMaintenance (p 1) ──► results
    (one per due table)         read log range, write Paimon,   CommitLakeTableSnapshot    Java: Paimon compaction and
                                commit Paimon (offsets in the   to the coordinator         snapshot expiry, when the table
                                snapshot properties)                                       asks (fluss.lake.maintenance)

* ``--once`` (batch mode): the tasks are every lake-enabled table, listed by the driver; the job tiers each once
  and ends; the results are printed as JSON lines. Used by the tests.
* continuous (streaming mode): the source is a Flink ``NumberSequenceSource`` used as a clock; a scheduler
  (parallelism 1) turns each tick (every ``--interval``) into tasks for the tables that are due, i.e. whose
  last lake commit is older than ``table.datalake.freshness`` and which were not scheduled in the last
  freshness interval.

Tables are independent tasks spread over ``--parallelism`` subtasks, so a slow table keeps one subtask busy and
the others go on. The work inside ``TierTable`` is :func:`fluss.lake.tiering.tier_table` (plain Python on the
Fluss client and pypaimon); its Paimon commit is idempotent (see ``docs/lakehouse.md``), so a task retried by
Flink, or a restarted job, never tiers the same offsets twice.

Run it with ``python -m tiering_job --bootstrap-servers HOST:PORT`` (local mini cluster) or
``flink run -py tiering_job/job.py --bootstrap-servers HOST:PORT`` (an existing Flink cluster).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import threading
import time

log = logging.getLogger("tiering_job")

DEFAULT_PARALLELISM = 2


# ---------------------------------------------------------------- work done inside Flink's Python workers

class _FlussSession:
    """A Fluss connection and an event loop owned by one Python worker (functions run synchronously)."""

    def __init__(self, bootstrap: str | dict[str, str]) -> None:
        """``bootstrap``: the bootstrap servers, or the client properties (with credentials on a secured cluster)."""
        import fluss

        props = {"bootstrap.servers": bootstrap} if isinstance(bootstrap, str) else dict(bootstrap)
        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(fluss.FlussConnection.create(fluss.Config(props)))

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        try:
            self.run(self.conn.aclose())
        finally:
            self.loop.close()


def _function_base():
    from pyflink.datastream.functions import FlatMapFunction

    return FlatMapFunction


class TierTable(_function_base()):
    """One tiering round per incoming task ``{"table_id": ...}``; emits the result (with the snapshot to report)."""

    def __init__(self, bootstrap: str | dict[str, str], warehouse: str | None) -> None:
        self.bootstrap = bootstrap
        self.warehouse = warehouse
        self.session: _FlussSession | None = None

    def open(self, runtime_context) -> None:
        self.session = _FlussSession(self.bootstrap)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

    def flat_map(self, value: str):
        task = json.loads(value)
        try:
            result = self.session.run(tier_one(self.session.conn, task["table_id"], self.warehouse))
        except Exception as e:  # noqa: BLE001 - one failing table must not fail the others
            log.exception("tiering table %s failed", task)
            result = {"table_id": task["table_id"], "error": f"{type(e).__name__}: {e}"}
        yield json.dumps(result)


class ReportLakeSnapshot(_function_base()):
    """The committer: reports each new lake snapshot to the coordinator (CommitLakeTableSnapshot)."""

    def __init__(self, bootstrap: str | dict[str, str]) -> None:
        self.bootstrap = bootstrap
        self.session: _FlussSession | None = None

    def open(self, runtime_context) -> None:
        self.session = _FlussSession(self.bootstrap)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

    def flat_map(self, value: str):
        from fluss.lake.maintenance import MAINTENANCE, RETAIN_FROM

        result = json.loads(value)
        report = result.pop("report", None)
        if report is not None:
            from fluss.lake.snapshot import LakeSnapshot, commit_lake_snapshot
            from fluss.rpc.gen import fluss_api_pb2 as pb

            msg = pb.LakeSnapshotPb.FromString(bytes.fromhex(report))
            self.session.run(commit_lake_snapshot(self.session.conn, LakeSnapshot.from_pb(msg)))
            result["reported"] = True
            if MAINTENANCE in result:  # the coordinator names this snapshot now: expiry must keep it
                result[MAINTENANCE][RETAIN_FROM] = msg.snapshot_id
        yield json.dumps(result)


class ScheduleDueTables(_function_base()):
    """Continuous mode: on each clock tick, emit a task for every lake table that is due."""

    def __init__(self, bootstrap: str | dict[str, str], interval_s: float) -> None:
        self.bootstrap = bootstrap
        self.interval_s = interval_s
        self.session: _FlussSession | None = None
        self.scheduled_at: dict[int, float] = {}

    def open(self, runtime_context) -> None:
        self.session = _FlussSession(self.bootstrap)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

    def flat_map(self, tick):
        time.sleep(self.interval_s)
        try:
            tasks = self.session.run(due_tasks(self.session.conn, force=False))
        except Exception:  # noqa: BLE001 - the coordinator may be restarting: try again next tick
            log.exception("listing lake tables failed")
            return
        now = time.monotonic()
        for task in tasks:
            lease_s = task.pop("freshness_ms") / 1000
            if now - self.scheduled_at.get(task["table_id"], -1e18) < lease_s:
                continue  # scheduled recently and maybe still running
            self.scheduled_at[task["table_id"]] = now
            yield json.dumps(task)


# ---------------------------------------------------------------- plain-Python pieces (used by the functions)

async def due_tasks(conn, force: bool) -> list[dict]:
    """The tiering tasks: every lake-enabled table (``force``) or those due by their freshness."""
    from fluss.lake.config import freshness_ms
    from fluss.lake.snapshot import list_lake_tables
    from fluss.lake.tiering import is_due

    out = []
    for info, snapshot in await list_lake_tables(conn):
        if force or is_due(info, snapshot):
            out.append({"table_id": info.table_id, "table": str(info.table_path), "freshness_ms": freshness_ms(info)})
    return out


async def tier_one(conn, table_id: int, warehouse: str | None) -> dict:
    """Tiers one table (found by id among the lake tables) without reporting; the result carries the report."""
    from fluss.lake.maintenance import MAINTENANCE, maintenance_request
    from fluss.lake.paimon import lake_of_table
    from fluss.lake.snapshot import list_lake_tables
    from fluss.lake.tiering import tier_table

    found = next(((i, s) for i, s in await list_lake_tables(conn) if i.table_id == table_id), None)
    if found is None:
        return {"table_id": table_id, "skipped": "not a lake table any more"}
    info, snapshot = found
    lake = lake_of_table(info, warehouse)
    result = await tier_table(conn, lake, info, snapshot, report=False)
    out = result.as_dict()
    if result.to_report is not None:
        out["report"] = result.to_report.to_pb().SerializeToString().hex()
        request = maintenance_request(info, lake.catalog_options, result)
        if request is not None:
            out[MAINTENANCE] = request
    return out


# ---------------------------------------------------------------- the Flink job

def build_environment(parallelism: int, streaming: bool):
    from pyflink.common import Configuration
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    config = Configuration()
    # Flink's Python workers must run this interpreter (the one that has fluss, pypaimon and this job).
    config.set_string("python.executable", sys.executable)
    config.set_string("python.client.executable", sys.executable)
    if streaming:
        # One element per bundle: a Python operator's output reaches the next operator when its bundle ends,
        # and the scheduler sleeps between ticks, so bigger bundles would hold tasks back for minutes.
        config.set_string("python.fn-execution.bundle.size", "1")
        config.set_string("python.fn-execution.bundle.time", "100")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING if streaming else RuntimeExecutionMode.BATCH)
    env.set_parallelism(parallelism)
    from fluss.flink import add_connector_jars

    add_connector_jars(env)  # the Java maintenance step: the connector jar and Paimon's classes
    here = os.path.dirname(os.path.abspath(__file__))
    env.add_python_file(here)  # ship this package to a remote Flink cluster's workers (flink run -py)
    return env


def run_once(bootstrap: str | dict[str, str], warehouse: str | None, parallelism: int) -> list[dict]:
    """Tiers every lake-enabled table once in one bounded PyFlink job; returns the per-table results."""
    from pyflink.common import Types

    session = _FlussSession(bootstrap)
    try:
        tasks = session.run(due_tasks(session.conn, force=True))
    finally:
        session.close()
    if not tasks:
        return []
    env = build_environment(min(parallelism, len(tasks)), streaming=False)
    source = env.from_collection([json.dumps(t) for t in tasks], type_info=Types.STRING()).set_parallelism(1)
    reported = (source.rebalance()
                .flat_map(TierTable(bootstrap, warehouse), output_type=Types.STRING()).name("tier-table")
                .flat_map(ReportLakeSnapshot(bootstrap), output_type=Types.STRING()).name("report-lake-snapshot")
                .set_parallelism(1))
    results = lake_maintenance(reported)
    with results.execute_and_collect("fluss-lake-tiering (once)") as it:
        return [json.loads(r) for r in it]


def run_continuous(bootstrap: str | dict[str, str], warehouse: str | None, parallelism: int, interval_s: float) -> None:
    """Tiers due tables forever (a streaming PyFlink job clocked by a number-sequence source)."""
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    env = build_environment(parallelism, streaming=True)
    ticks = env.from_source(NumberSequenceSource(0, 2**62), WatermarkStrategy.no_watermarks(), "clock",
                            type_info=Types.LONG()).set_parallelism(1)
    reported = (ticks.flat_map(ScheduleDueTables(bootstrap, interval_s), output_type=Types.STRING()).name("schedule")
                .set_parallelism(1)
                .rebalance()
                .flat_map(TierTable(bootstrap, warehouse), output_type=Types.STRING()).name("tier-table")
                .flat_map(ReportLakeSnapshot(bootstrap), output_type=Types.STRING()).name("report-lake-snapshot")
                .set_parallelism(1))
    lake_maintenance(reported).print()
    env.execute("fluss-lake-tiering")


def lake_maintenance(reported):
    """The Java step after the committer: ``org.fluss.py.flink.lake.LakeMaintenance`` (Paimon compaction and
    snapshot expiry of the tables whose results ask for it; other results pass through unchanged)."""
    from pyflink.common import Types
    from pyflink.datastream import DataStream
    from pyflink.java_gateway import get_gateway

    function = get_gateway().jvm.org.fluss.py.flink.lake.LakeMaintenance()
    stream = reported._j_data_stream.map(function, Types.STRING().get_java_type_info())
    return DataStream(stream.name("lake-maintenance").setParallelism(1))


def parse_duration_s(text: str) -> float:
    from fluss.lake.config import parse_duration_ms

    return parse_duration_ms(text) / 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tiering_job", description=__doc__.split("\n\n")[0])
    from fluss.cli.common import add_bootstrap, client_properties

    add_bootstrap(parser)  # --bootstrap-servers, --username/--password, --client-config
    parser.add_argument("--once", action="store_true", help="tier every lake table once and exit")
    parser.add_argument("--interval", default="5s", help="continuous mode: how often to look for due tables [5s]")
    parser.add_argument("--parallelism", type=int, default=DEFAULT_PARALLELISM,
                        help=f"tables tiered at the same time [{DEFAULT_PARALLELISM}]")
    parser.add_argument("--warehouse", default=None,
                        help="Paimon warehouse (default: the one recorded in each table's properties)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    from fluss.cli.common import NOISY_LOGGERS
    from fluss.flink.jvm_output import quiet_jvm_logging

    for name in NOISY_LOGGERS:  # e.g. Apache Beam's BigQuery INFO lines at import
        logging.getLogger(name).setLevel(logging.WARNING)
    quiet_jvm_logging()
    client = client_properties(args)
    if args.once:
        results = run_once(client, args.warehouse, args.parallelism)
        for r in results:
            print(json.dumps(r), flush=True)
        return 1 if any("error" in r for r in results) else 0
    run_continuous(client, args.warehouse, args.parallelism, parse_duration_s(args.interval))
    return 0


if __name__ == "__main__":
    # Under `flink run -py tiering_job/job.py` this file runs as a script: make the package importable.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    threading.current_thread().name = "tiering-job"
    sys.exit(main())
