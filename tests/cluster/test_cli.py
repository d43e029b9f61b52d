"""`fluss cluster start|status|stop` manage a cluster of real processes in a directory; `fluss table list|describe`
show the tables of a running cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fluss.server.cluster import _pid_alive
from fluss.server.zk.local_server import free_port


def _fluss(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fluss.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_cluster_start_status_stop(tmp_path):
    port = free_port()
    d = str(tmp_path / "c")
    started = _fluss("cluster", "start", "--dir", d, "--tablet-servers", "1", "--port", str(port))
    assert started.returncode == 0, started.stdout + started.stderr
    assert f"127.0.0.1:{port}" in started.stdout
    state = json.loads((tmp_path / "c" / "cluster.json").read_text())
    pids = [state["zookeeper"]["pid"], *(c["pid"] for c in state["coordinators"]),
            *(t["pid"] for t in state["tablet_servers"])]
    try:
        assert all(_pid_alive(p) for p in pids)
        status = _fluss("cluster", "status", "--dir", d)
        assert status.returncode == 0
        assert status.stdout.count(" up") == 3 and "DOWN" not in status.stdout
        again = _fluss("cluster", "start", "--dir", d, "--port", str(port))
        assert again.returncode == 1 and "already running" in again.stdout
    finally:
        stopped = _fluss("cluster", "stop", "--dir", d)
    assert stopped.returncode == 0
    assert not any(_pid_alive(p) for p in pids)
    assert _fluss("cluster", "status", "--dir", d).returncode == 1
    assert not os.path.exists(tmp_path / "c" / "cluster.json")


# ---------------------------------------------------------------- fluss table list | describe (shared cluster)

@pytest.mark.asyncio(loop_scope="session")
async def test_table_list_and_describe_show_definitions_buckets_and_rows(cluster, conn, admin, database):
    import pyarrow as pa

    import fluss

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("day", pa.string()), ("v", pa.float64())])
    accounts = fluss.TablePath(database, "accounts")
    await admin.create_table(accounts, fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]),
                                                             bucket_count=2, properties={"table.log.ttl": "2h"}))
    events = fluss.TablePath(database, "events")
    await admin.create_table(events, fluss.TableDescriptor(fluss.Schema(schema), partition_keys=["day"],
                                                           bucket_count=1))
    writer = (await conn.get_table(accounts)).new_upsert().create_writer()
    for i in range(30):
        writer.upsert({"id": i, "day": "d", "v": 1.0})
    writer.delete({"id": 3})
    await writer.flush()
    appender = (await conn.get_table(events)).new_append().create_writer()
    for i in range(12):
        appender.append({"id": i, "day": "2026-12-01" if i < 5 else "2026-12-02", "v": 0.5})
    await appender.flush()
    servers = ("--bootstrap-servers", cluster.bootstrap_servers)

    listed = _fluss("table", "list", database, *servers)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [f"{database}.accounts", f"{database}.events"]

    described = _fluss("table", "describe", f"{database}.accounts", *servers)
    assert described.returncode == 0, described.stderr
    out = described.stdout
    assert f"{database}.accounts (primary-key table" in out
    assert "id BIGINT NOT NULL  [primary key]" in out and "table.log.ttl = 2h" in out
    assert "rows: 29" in out and "buckets: 2" in out
    table = out[out.index("bucket  leader"):].splitlines()
    assert [line.split()[0] for line in table[1:]] == ["0", "1"]
    log_ends = sum(int(line.split()[-1]) for line in table[1:])
    assert log_ends == 31  # 30 inserts + 1 delete in the changelog
    for line in table[1:]:
        _, leader, replicas, isr, start, end = line.split()
        assert leader in replicas.split(",") and set(isr.split(",")) <= set(replicas.split(",")) and start == "0"

    described = _fluss("table", "describe", f"{database}.events", *servers)
    assert described.returncode == 0, described.stderr
    assert "(log table" in described.stdout and "partitioned by: day" in described.stdout
    assert "rows: 12" in described.stdout
    parts = [line.split() for line in described.stdout.splitlines() if line.startswith("2026-12-0")]
    assert [(p[0], p[-1]) for p in parts] == [("2026-12-01", "5"), ("2026-12-02", "7")]

    missing = _fluss("table", "describe", f"{database}.nope", *servers)
    assert missing.returncode == 2 and "nope" in missing.stderr
