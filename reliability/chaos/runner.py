"""One nemesis run: set up the cluster (in network namespaces, with a small disk, when the machine allows),
run the workload under the nemesis, heal everything, read the final state back and check the history.

``run(RunConfig(...))`` returns the report (a dict, also written as ``report.json`` next to ``history.jsonl`` in
the output directory); ``python -m reliability.chaos`` is the command line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import fluss
from fluss.server.cluster import LocalCluster
from reliability import disk as small_disk
from reliability.chaos import checker, nemesis, network
from reliability.chaos.history import History
from reliability.chaos.workload import (
    DATABASE,
    KV_TABLE,
    LOG_TABLE,
    Workload,
    create_tables,
    read_final_state,
)
from reliability.raw import RawRpc

log = logging.getLogger(__name__)

TABLET_SERVERS = 3
COORDINATORS = 2
DISK_SERVER = 2  # the tablet server whose data directory is the small disk
SESSION_TIMEOUT_S = 3.0


@dataclass
class RunConfig:
    duration_s: float = 300.0
    faults: list[str] = field(default_factory=lambda: list(nemesis.FAULTS))
    seed: int = 0
    output: Path | None = None  # default: a temporary directory
    use_network: bool = True  # network namespaces when the machine allows them
    disk_mb: int = 128  # 48 MiB filled with data alone in 300 s on a faster machine
    log_writers: int = 4
    kv_writers: int = 3
    interval_s: tuple[float, float] = (2.0, 5.0)
    fault_duration_s: tuple[float, float] = (2.0, 7.0)


def run(config: RunConfig) -> dict[str, Any]:
    out = Path(config.output or tempfile.mkdtemp(prefix="fluss-chaos-"))
    out.mkdir(parents=True, exist_ok=True)
    net = disk = None
    skipped: dict[str, str] = {}
    faults = list(config.faults)
    if config.use_network and any(f in nemesis.NETWORK_FAULTS for f in faults) and network.available():
        nodes = [nemesis.tablet_node(s) for s in range(TABLET_SERVERS)] + \
                [nemesis.coordinator_node(i) for i in range(COORDINATORS)]
        net = network.Network(nodes)
    else:
        for f in nemesis.NETWORK_FAULTS:
            if f in faults:
                faults.remove(f)
                skipped[f] = "no network namespaces on this machine (needs root and ip netns)"
    if "disk-full" in faults and not small_disk.can_mount():
        faults.remove("disk-full")
        skipped["disk-full"] = "cannot mount a tmpfs (needs root)"
    if not faults:
        raise RuntimeError(f"none of the faults {config.faults} can run here: {skipped}")
    cluster_dir = Path(tempfile.mkdtemp(prefix="fluss-chaos-cluster-"))
    history = History(out / "history.jsonl")
    try:
        if net is not None:
            net.setup()
        if "disk-full" in faults:
            disk = small_disk.SmallDisk(cluster_dir / "small-disk", config.disk_mb).mount()
        report = asyncio.run(_run(config, faults, history, cluster_dir, net, disk))
    finally:
        history.close()
        shutil.copytree(cluster_dir / "cluster" / "logs", out / "logs", dirs_exist_ok=True)  # for a post-mortem
        if disk is not None:
            disk.unmount()
        if net is not None:
            net.teardown()
        shutil.rmtree(cluster_dir, ignore_errors=True)
    report["faults_skipped"] = skipped
    report["output"] = str(out)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str))
    return report


def _cluster(cluster_dir: Path, net: network.Network | None, disk: small_disk.SmallDisk | None) -> LocalCluster:
    config = {"default.replication.factor": "3", "log.replica.min-in-sync-replicas-number": "2",
              "log.replica.max-lag-time": "5s", "log.replica.fetch.wait-max-time": "100ms",
              "log.segment.file-size": "4mb", "kv.snapshot.interval": "5s",
              # sealed segments go to remote storage every 5 s (not every minute), so the local log, which cannot
              # drop what is not tiered yet, stays small on the small disk
              "remote.log.task-interval-duration": "5s"}
    per_server = {DISK_SERVER: {"data.dir": str(disk.mount_point / "data")}} if disk is not None else {}
    kwargs: dict[str, Any] = {}
    if net is not None:
        def node(kind: str, index: int) -> str:
            return nemesis.tablet_node(index) if kind == "tablet-server" else nemesis.coordinator_node(index)

        kwargs = {"host_of": lambda kind, i: net.ips[node(kind, i)],
                  "command_prefix": lambda kind, i: net.prefix(node(kind, i)), "zookeeper_host": net.zk_ip}
    return LocalCluster(tablet_servers=TABLET_SERVERS, coordinators=COORDINATORS, directory=cluster_dir / "cluster",
                        server_config=config, tablet_server_config=per_server,
                        zookeeper_session_timeout=f"{SESSION_TIMEOUT_S:g}s", **kwargs)


async def _run(config: RunConfig, faults: list[str], history: History, cluster_dir: Path,
               net: network.Network | None, disk: small_disk.SmallDisk | None) -> dict[str, Any]:
    started = time.monotonic()
    with _cluster(cluster_dir, net, disk) as cluster:
        conn = await fluss.FlussConnection.create(fluss.Config({
            "bootstrap.servers": cluster.bootstrap_servers, "writer.batch-timeout": "5ms",
            "request-timeout": "10s"}))
        raw = RawRpc(cluster.bootstrap_servers)
        tables = [(DATABASE, LOG_TABLE), (DATABASE, KV_TABLE)]
        try:
            await create_tables(conn.get_admin(), replication=3)
            await asyncio.to_thread(nemesis.wait_healthy, raw, tables)
            workload = Workload(conn, history, config.log_writers, config.kv_writers, seed=config.seed)
            await workload.start()
            nem = nemesis.Nemesis(cluster, history, faults, network=net, disk=disk,
                                  disk_server=DISK_SERVER if disk is not None else None,
                                  session_timeout_s=SESSION_TIMEOUT_S, seed=config.seed,
                                  interval_s=config.interval_s, duration_s=config.fault_duration_s)
            task = asyncio.create_task(nem.run(), name="nemesis")
            await asyncio.sleep(config.duration_s)
            nem.stop()
            await task
            await asyncio.to_thread(nem.restore)
            nem.close()
            history.record(type="phase", f="healed")
            heal_s = await asyncio.to_thread(nemesis.wait_healthy, raw, tables, 180.0)
            await asyncio.sleep(2)  # the workload's writes go through again
            await workload.stop()
            final = await read_final_state(conn, config.kv_writers)
        finally:
            raw.close()
            await conn.aclose()
    result = checker.check(history.events, final)
    fault_counts: dict[str, int] = {}
    for e in history.events:
        if e["type"] == "fault" and e["phase"] == "start":
            fault_counts[e["f"]] = fault_counts.get(e["f"], 0) + 1
    return {
        "config": {**asdict(config), "output": str(config.output), "faults_enabled": faults,
                   "network_namespaces": net is not None, "small_disk": disk is not None},
        "duration_s": round(time.monotonic() - started, 1),
        "operations": sum(1 for e in history.events if e["type"] in ("ok", "fail") and e.get("op") is not None),
        "faults_injected": fault_counts,
        "faults_failed_to_inject": sum(1 for e in history.events if e["type"] == "fault-skipped"),
        "heal_s": round(heal_s, 1),
        **result,
    }


def summary(report: dict[str, Any]) -> str:
    lines = [f"nemesis run of {report['duration_s']}s: {report['operations']} operations, "
             f"valid={report['valid']}",
             f"  log: {report['log']}", f"  kv: {report['kv']}",
             f"  anomalies: {report['anomalies']}",
             f"  failed operations: {report['failed_operations']}",
             "  faults: count, longest time without any acknowledged write, longest stall of one writer"]
    for kind, stat in sorted(report["availability"].items()):
        lines.append(f"    {kind:24s} {stat['count']:4d}  {stat['max_unavailability_s']:7.2f}s  "
                     f"{stat['max_writer_stall_s']:7.2f}s")
    if report.get("faults_skipped"):
        lines.append(f"  not run here: {report['faults_skipped']}")
    lines.append(f"  history and report in {report['output']}")
    return "\n".join(lines)
