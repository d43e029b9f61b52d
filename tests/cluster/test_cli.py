"""`fluss cluster start|status|stop` manage a cluster of real processes in a directory; `fluss table list|describe`
show the tables of a running cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fluss.server.cluster import _pid_alive
from fluss.server.zk.local_server import free_port


def _fluss(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fluss.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_cluster_start_status_stop(tmp_path):
    port = free_port()
    d = str(tmp_path / "c")
    config = tmp_path / "server.yaml"
    config.write_text("datalake.format: paimon\ndatalake.paimon.warehouse: " + str(tmp_path / "lake") + "\n"
                      "zookeeper.address: 127.0.0.1:1\n")  # a full server.yaml's address is ignored, and said so
    started = _fluss("cluster", "start", "--dir", d, "--tablet-servers", "1", "--port", str(port),
                     "--config", str(config), "-D", "default.replication.factor=1", "--timeout", "120")
    assert started.returncode == 0, started.stdout + started.stderr
    assert f"127.0.0.1:{port}" in started.stdout and "ignoring zookeeper.address" in started.stdout
    assert "default.replication.factor = 1" in started.stdout and "datalake.format = paimon" in started.stdout
    assert f"logs: {d}/logs" in started.stdout
    state = json.loads((tmp_path / "c" / "cluster.json").read_text())
    assert state["server_config"]["datalake.format"] == "paimon"
    pids = [state["zookeeper"]["pid"], *(c["pid"] for c in state["coordinators"]),
            *(t["pid"] for t in state["tablet_servers"])]
    try:
        assert all(_pid_alive(p) for p in pids)
        status = _fluss("cluster", "status", "--dir", d)
        assert status.returncode == 0, status.stdout
        assert status.stdout.count(" up") == 3 and "DOWN" not in status.stdout
        nothing = _fluss("tiering", "status", "--bootstrap-servers", f"127.0.0.1:{port}")
        assert nothing.returncode == 1 and "Nothing to tier" in nothing.stderr, nothing.stdout + nothing.stderr
        assert "table.datalake.enabled" in nothing.stderr
        again = _fluss("cluster", "start", "--dir", d, "--port", str(port))
        assert again.returncode == 1 and "already running" in again.stdout
        # a second cluster on the busy port is refused before anything starts
        busy = _fluss("cluster", "start", "--dir", str(tmp_path / "other"), "--port", str(port))
        assert busy.returncode == 1 and f"port {port}" in busy.stderr and "already in use" in busy.stderr
        assert not (tmp_path / "other" / "cluster.json").exists()
        # a crashed tablet server: status says DOWN and exits 1
        os.kill(state["tablet_servers"][0]["pid"], signal.SIGKILL)
        _wait_dead(state["tablet_servers"][0]["pid"])
        degraded = _fluss("cluster", "status", "--dir", d)
        assert degraded.returncode == 1 and "tablet-server-0" in degraded.stdout and "DOWN" in degraded.stdout
        # everything gone (a crash, a reboot): stale, and `start` clears it by itself
        for pid in pids:
            if _pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
                _wait_dead(pid)
        stale = _fluss("cluster", "status", "--dir", d)
        assert stale.returncode == 3 and "STALE" in stale.stdout, stale.stdout
        restarted = _fluss("cluster", "start", "--dir", d, "--tablet-servers", "1", "--port", str(port))
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        assert "Cleared the stale state" in restarted.stdout
        state = json.loads((tmp_path / "c" / "cluster.json").read_text())
        pids = [state["zookeeper"]["pid"], *(c["pid"] for c in state["coordinators"]),
                *(t["pid"] for t in state["tablet_servers"])]
        assert _fluss("cluster", "status", "--dir", d).returncode == 0
    finally:
        stopped = _fluss("cluster", "stop", "--dir", d)
    assert stopped.returncode == 0
    assert not any(_pid_alive(p) for p in pids)
    assert _fluss("cluster", "status", "--dir", d).returncode == 1
    assert not os.path.exists(tmp_path / "c" / "cluster.json")


def _wait_dead(pid: int, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_help_lists_every_option_with_its_default():
    helped = _fluss("tiering", "start", "--help")
    assert helped.returncode == 0
    for option in ("--once", "--interval", "--parallelism", "--warehouse", "--bootstrap-servers"):
        assert option in helped.stdout, helped.stdout
    assert "(default: 5s)" in helped.stdout and "(default: 127.0.0.1:9123)" in helped.stdout
    cluster = _fluss("cluster", "--help").stdout
    assert "(default: 9123)" in cluster and "(default: 3)" in cluster and "-D KEY=VALUE" in cluster


# ---------------------------------------------------------------- fluss database | table create/produce/scan/drop


def test_database_and_table_commands_as_a_kafka_user_types_them(cluster):
    servers = ("--bootstrap-servers", cluster.bootstrap_servers)
    db = f"cli_{os.getpid()}"
    assert _fluss("database", "create", db, *servers).returncode == 0
    assert db in _fluss("database", "list", *servers).stdout.split()
    created = _fluss("table", "create", f"{db}.orders", *servers, "--schema",
                     "id BIGINT NOT NULL, item STRING, price DECIMAL(10, 2), at TIMESTAMP(3)",
                     "--primary-key", "id", "--buckets", "2")
    assert created.returncode == 0 and "primary-key table" in created.stdout, created.stderr
    lines = ['{"id": 1, "item": "pen", "price": "1.50", "at": "2026-12-01 10:00:00"}',
             '{"id": 2, "item": "ink", "price": 3}', '{"id": "three"}', '{"id": 4}']
    produced = subprocess.run([sys.executable, "-m", "fluss.cli", "table", "produce", f"{db}.orders", *servers],
                              input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    assert produced.returncode == 1, produced.stderr  # stops at the bad line, after writing the ones before it
    assert "Wrote 2 row(s)" in produced.stderr and "line 3: column 'id'" in produced.stderr, produced.stderr
    scanned = _fluss("table", "scan", f"{db}.orders", *servers, "--from-beginning", "--max-rows", "2",
                     "--format", "json")
    assert scanned.returncode == 0, scanned.stderr
    rows = sorted((json.loads(line) for line in scanned.stdout.splitlines()), key=lambda r: r["id"])
    assert rows == [{"_change_type": "+I", "id": 1, "item": "pen", "price": "1.50", "at": "2026-12-01T10:00:00"},
                    {"_change_type": "+I", "id": 2, "item": "ink", "price": "3.00", "at": None}]
    as_csv = _fluss("table", "scan", f"{db}.orders", *servers, "--from-beginning", "--timeout-ms", "1500",
                    "--format", "csv", "--columns", "id,price")
    assert sorted(as_csv.stdout.splitlines()) == sorted(["_change_type,id,price", "+I,1,1.50", "+I,2,3.00"])
    # a console consumer without --from-beginning sees only new rows
    new_only = _fluss("table", "scan", f"{db}.orders", *servers, "--timeout-ms", "1500", "--format", "json")
    assert new_only.returncode == 0 and new_only.stdout.strip() == "", new_only.stdout
    assert _fluss("table", "drop", f"{db}.orders", *servers).returncode == 0
    assert _fluss("table", "drop", f"{db}.orders", *servers, "--if-exists").returncode == 0
    gone = _fluss("table", "drop", f"{db}.orders", *servers)
    assert gone.returncode == 2 and "orders" in gone.stderr and len(gone.stderr.strip().splitlines()) == 1
    assert _fluss("database", "drop", db, *servers).returncode == 0
    assert db not in _fluss("database", "list", *servers).stdout.split()


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
    log_ends = sum(int(line.split()[5]) for line in table[1:])
    assert log_ends == 31  # 30 inserts + 1 delete in the changelog
    for line in table[1:]:
        _, leader, replicas, isr, start, end, local_start, local_end, size, segments, *remote = line.split()
        assert leader in replicas.split(",") and set(isr.split(",")) <= set(replicas.split(",")) and start == "0"
        assert (local_start, local_end, segments) == ("0", end, "1") and size.endswith("B")
        assert remote == ["-"] * 4  # nothing tiered: segments of 1gb never roll here

    described = _fluss("table", "describe", f"{database}.events", *servers)
    assert described.returncode == 0, described.stderr
    assert "(log table" in described.stdout and "partitioned by: day" in described.stdout
    assert "rows: 12" in described.stdout
    parts = [line.split() for line in described.stdout.splitlines() if line.startswith("2026-12-0")]
    assert [(p[0], p[6]) for p in parts] == [("2026-12-01", "5"), ("2026-12-02", "7")]

    missing = _fluss("table", "describe", f"{database}.nope", *servers)
    assert missing.returncode == 2 and "nope" in missing.stderr


def test_server_with_an_invalid_option_does_not_start_and_names_the_key(tmp_path):
    """Invalid values stop the start naming the key; unknown keys only warn (checked before ZooKeeper is needed)."""
    config = tmp_path / "server.yaml"
    config.write_text("zookeeper.address: 127.0.0.1:1\nbind.listeners: FLUSS://127.0.0.1:0\n"
                      "log.segment.file-sise: 1gb\n")
    bad = _fluss("tablet-server", "--config", str(config), "-D", "tablet-server.id=0",
                 "-D", "log.replica.min-in-sync-replicas-number=zero", timeout=60)
    assert bad.returncode == 2
    assert "'log.replica.min-in-sync-replicas-number'" in bad.stderr and "zero" in bad.stderr
    assert "'log.segment.file-sise'" in bad.stderr and "did you mean 'log.segment.file-size'" in bad.stderr


def test_cluster_config_get_set_and_reset(cluster):
    servers = ["--bootstrap-servers", cluster.bootstrap_servers]
    try:
        done = _fluss("cluster", "config", "set", "kv.snapshot.interval=9min", *servers)
        assert done.returncode == 0, done.stderr
        assert "kv.snapshot.interval: set to '9min'" in done.stdout
        got = _fluss("cluster", "config", "get", "kv.snapshot.interval", "max.bucket.num", *servers)
        assert got.returncode == 0, got.stderr
        lines = {line.split()[0]: line.split()[1:] for line in got.stdout.splitlines()}
        assert lines == {"kv.snapshot.interval": ["9min", "[DYNAMIC_SERVER_CONFIG]"],
                         "max.bucket.num": ["64", "[INITIAL_SERVER_CONFIG]"]}
        refused = _fluss("cluster", "config", "set", "data.dir=/elsewhere", *servers)
        assert refused.returncode == 1 and "data.dir" in refused.stderr, refused.stderr
        assert _fluss("cluster", "config", "set", "no-equals-sign", *servers).returncode == 2
    finally:
        reset = _fluss("cluster", "config", "reset", "kv.snapshot.interval", *servers)
    assert reset.returncode == 0, reset.stderr
    got = _fluss("cluster", "config", "get", "kv.snapshot.interval", *servers)
    assert "[DEFAULT_CONFIG]" in got.stdout, got.stdout
