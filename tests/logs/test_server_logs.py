"""One log format across servers, ``log.level`` per component, and ``fluss cluster logs``."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

import fluss
from fluss.errors import FlussError
from fluss.server.cluster import LocalCluster
from fluss.server.cluster_logs import LogFilter, follow, merged, parse_entries
from fluss.server.logging_setup import configure, parse_line


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in ("kazoo", "fluss.rpc", "fluss.server")}
    yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)
    for name, lvl in levels.items():
        logging.getLogger(name).setLevel(lvl)


def test_format_names_time_level_server_and_component(restore_logging):
    out = io.StringIO()
    configure("tablet-server-7", {"log.level": "INFO", "log.level.fluss.rpc": "DEBUG"}, out)
    logging.getLogger("fluss.rpc.requests").debug("ProduceLog from %s", "peer")
    logging.getLogger("fluss.server.replica.manager").debug("not shown: below INFO")
    logging.getLogger("fluss.server.replica.manager").info("shown")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    first = parse_line(lines[0])
    assert (first.level, first.server, first.component, first.message) == \
        ("DEBUG", "tablet-server-7", "fluss.rpc.requests", "ProduceLog from peer")
    assert parse_line(lines[1]).component == "fluss.server.replica.manager"
    assert logging.getLogger("kazoo").level == logging.WARNING  # quiet unless configured


def test_invalid_level_names_the_key(restore_logging):
    with pytest.raises(FlussError, match="log.level.fluss.kv"):
        configure("x", {"log.level.fluss.kv": "LOUD"}, io.StringIO())


def test_tracebacks_stay_with_their_entry():
    lines = ["2026-12-01 10:00:00.000 ERROR [tablet-server-0] fluss.x: boom",
             "Traceback (most recent call last):", '  File "x.py", line 1', "ValueError: bad",
             "2026-12-01 10:00:01.000 INFO  [tablet-server-0] fluss.y: next"]
    entries = list(parse_entries(lines, "tablet-server-0"))
    assert [e.message for e in entries] == ["boom", "next"]
    assert entries[0].more[-1] == "ValueError: bad"
    assert LogFilter(text="ValueError").accepts(entries[0])
    assert not LogFilter(min_level=logging.ERROR).accepts(entries[1])


def test_follow_emits_new_entries(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    a = logs / "coordinator-0.log"
    a.write_text("2026-12-01 10:00:00.000 INFO  [coordinator-0] fluss.a: old\n")
    got: list[str] = []
    done = threading.Event()
    worker = threading.Thread(target=follow, args=(tmp_path, LogFilter(), lambda e: got.append(e.message), 0.05,
                                                    done.is_set))
    worker.start()
    try:
        time.sleep(0.2)
        with open(a, "a") as f:
            f.write("2026-12-01 10:00:02.000 WARNING [coordinator-0] fluss.a: new one\nTraceback: x\n")
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        done.set()
        worker.join(5)
    assert got == ["new one"]


def test_cluster_logs_are_one_format_and_merge(cluster):
    entries = list(merged(cluster.dir))
    servers = {e.server for e in entries}
    assert {"coordinator-0", "tablet-server-0", "tablet-server-1", "tablet-server-2"} <= servers
    stamped = [e for e in entries if e.timestamp]
    assert stamped and [e.timestamp for e in stamped] == sorted(e.timestamp for e in stamped)
    for path in (cluster.dir / "logs").glob("*.log"):
        for e in parse_entries(path.read_text().splitlines(), path.stem):
            assert e.server == path.stem, f"{path.name}: an entry of {e.server}"
            assert e.timestamp, f"{path.name}: a line outside the log format: {e.message!r}"


def test_fluss_cluster_logs_command_filters(cluster):
    out = subprocess.run([sys.executable, "-m", "fluss.cli", "cluster", "logs", "--dir", str(cluster.dir),
                          "--server", "tablet-server-1", "--level", "INFO", "--component", "fluss.server.tablet",
                          "--tail", "3"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert 1 <= len(lines) <= 3
    for line in lines:
        e = parse_line(line)
        assert e.server == "tablet-server-1" and e.component.startswith("fluss.server.tablet")
    bad = subprocess.run([sys.executable, "-m", "fluss.cli", "cluster", "logs", "--dir", str(cluster.dir),
                          "--server", "tablet-server-9"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "tablet-server-9" in bad.stdout


async def test_log_level_per_component_on_a_server():
    config = {"log.level": "WARNING", "log.level.fluss.rpc.requests": "DEBUG"}
    with LocalCluster(tablet_servers=1, server_config=config) as c:
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": c.bootstrap_servers}))
        try:
            path = fluss.TablePath("fluss", "logged")
            schema = pa.schema([("id", pa.int64())])
            await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=1))
            writer = (await conn.get_table(path)).new_append().create_writer()
            writer.write_arrow_batch(pa.record_batch([pa.array([1, 2, 3], pa.int64())], schema=schema))
            await writer.flush()
        finally:
            await conn.aclose()
        entries = list(merged(c.dir, LogFilter(servers={"tablet-server-0"})))
    requests = [e for e in entries if e.component == "fluss.rpc.requests"]
    assert any(e.level == "DEBUG" and e.message.startswith("ProduceLog from") for e in requests)
    assert not [e for e in entries if e.level == "INFO"], "log.level WARNING keeps INFO lines out"
