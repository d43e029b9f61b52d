"""The nemesis: faults injected into a running ``LocalCluster``, one at a time, each recorded in the history.

Kinds (``FAULTS``; a run picks among the enabled ones at random, with a seed):

=========================  ==========================================================================================
``kill-leader``            SIGKILL the leader of a random bucket; restarted after ``downtime``.
``kill-follower``          SIGKILL a follower of a random bucket; restarted after ``downtime``.
``kill-coordinator``       SIGKILL the active coordinator (a standby takes over); restarted after ``downtime``.
``pause-leader``           SIGSTOP a bucket leader, SIGCONT after ``duration`` (past the ZooKeeper session: the
                           session expires while the process is frozen).
``pause-follower``         the same for a follower.
``pause-coordinator``      the same for the active coordinator.
``zk-expire``              cut a bucket leader off from ZooKeeper (alive, serving clients and followers) for longer
                           than the session timeout: its session expires, the coordinator moves its leaderships.
``partition-leader``       cut a bucket leader off from its followers and the coordinator (not from ZooKeeper or
                           clients) for ``duration``.
``isolate-server``         cut a tablet server off from everyone (ZooKeeper, servers, clients) for ``duration``.
``partition-coordinator``  cut the active coordinator off from ZooKeeper (it must give up being active).
``disk-full``              fill the data disk of the tablet server that has one (a small tmpfs), free it after
                           ``duration``.
=========================  ==========================================================================================

Network faults need :class:`~reliability.chaos.network.Network` (root, ``ip netns``); ``disk-full`` needs the
small disk. Kinds a machine cannot do are left out of a run and reported as such.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import time
from dataclasses import dataclass

from fluss.server.cluster import LocalCluster
from reliability.chaos.history import History
from reliability.chaos.network import CLIENT, ZK, Network
from reliability.disk import SmallDisk
from reliability.raw import RawRpc

log = logging.getLogger(__name__)

PROCESS_FAULTS = ("kill-leader", "kill-follower", "kill-coordinator", "pause-leader", "pause-follower",
                  "pause-coordinator")
NETWORK_FAULTS = ("zk-expire", "partition-leader", "isolate-server", "partition-coordinator")
DISK_FAULTS = ("disk-full",)
FAULTS = PROCESS_FAULTS + NETWORK_FAULTS + DISK_FAULTS


def tablet_node(sid: int) -> str:
    return f"ts{sid}"


def coordinator_node(index: int) -> str:
    return f"coord{index}"


@dataclass
class Target:
    kind: str  # "tablet-server" | "coordinator"
    index: int

    @property
    def node(self) -> str:
        return tablet_node(self.index) if self.kind == "tablet-server" else coordinator_node(self.index)


class Nemesis:
    def __init__(self, cluster: LocalCluster, history: History, faults: list[str], *, network: Network | None,
                 disk: SmallDisk | None, disk_server: int | None, session_timeout_s: float, seed: int = 0,
                 interval_s: tuple[float, float] = (2.0, 5.0), duration_s: tuple[float, float] = (2.0, 7.0)) -> None:
        self.cluster = cluster
        self.history = history
        self.faults = list(faults)
        self.network = network
        self.disk = disk
        self.disk_server = disk_server
        self.session_timeout_s = session_timeout_s
        self.rng = random.Random(seed)
        self.interval_s = interval_s
        self.duration_s = duration_s
        self.raw = RawRpc(cluster.bootstrap_servers)
        self._stop = asyncio.Event()
        self._paused: set[int] = set()

    async def run(self) -> None:
        """Injects faults until :meth:`stop`, one at a time with quiet intervals between them."""
        while not self._stop.is_set():
            if await self._sleep(self.rng.uniform(*self.interval_s)):
                break
            kind = self.rng.choice(self.faults)
            try:
                await self._inject(kind)
            except Exception as e:  # noqa: BLE001 - a fault that could not be set up is recorded, not fatal
                log.warning("fault %s could not be injected: %s", kind, e)
                self.history.record(type="fault-skipped", f=kind, error=str(e)[:200])
            await asyncio.to_thread(self.restore)

    def stop(self) -> None:
        self._stop.set()

    async def _sleep(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
            return True
        except TimeoutError:
            return False

    def restore(self) -> None:
        """Undoes every fault: heals the network, frees the disk, resumes paused and restarts dead processes."""
        if self.network is not None:
            self.network.heal()
        if self.disk is not None:
            self.disk.free()
        for pid in list(self._paused):
            self._signal(pid, signal.SIGCONT)
        self._paused.clear()
        for index, c in enumerate(self.cluster._coordinators):  # noqa: SLF001 - the harness owns the processes
            if not c.alive():
                self.cluster.start_coordinator(index, wait=False)
        for sid in list(self.cluster._tablets):  # noqa: SLF001
            if not self.cluster._tablets[sid].alive():  # noqa: SLF001
                self.cluster.start_tablet_server(sid, wait=False)

    # ------------------------------------------------------------ targets

    def _buckets(self):
        from reliability.chaos.workload import DATABASE, KV_TABLE, LOG_TABLE

        table = self.rng.choice([LOG_TABLE, KV_TABLE])
        return self.raw.buckets(DATABASE, table)

    def _leader(self) -> Target:
        leaders = [b.leader_id for b in self._buckets() if b.leader_id >= 0]
        if not leaders:
            raise RuntimeError("no bucket has a leader")
        return Target("tablet-server", self.rng.choice(leaders))

    def _follower(self) -> Target:
        bucket = self.rng.choice(self._buckets())
        followers = [r for r in bucket.replicas if r != bucket.leader_id]
        return Target("tablet-server", self.rng.choice(followers))

    def _active_coordinator(self) -> Target:
        address = self.raw.coordinator_address()
        for index, c in enumerate(self.cluster._coordinators):  # noqa: SLF001
            if f"{c.host}:{c.port}" == address:
                return Target("coordinator", index)
        raise RuntimeError(f"active coordinator {address} is not one of ours")

    def _pid(self, target: Target) -> int:
        procs = self.cluster._tablets if target.kind == "tablet-server" else dict(  # noqa: SLF001
            enumerate(self.cluster._coordinators))  # noqa: SLF001
        pid = procs[target.index].pid
        if pid is None or not procs[target.index].alive():
            raise RuntimeError(f"{target.node} is not running")
        return pid

    def _signal(self, pid: int, sig: int) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

    # ------------------------------------------------------------ faults

    async def _inject(self, kind: str) -> None:
        duration = self.rng.uniform(*self.duration_s)
        if kind.startswith("kill-"):
            target = {"kill-leader": self._leader, "kill-follower": self._follower,
                      "kill-coordinator": self._active_coordinator}[kind]()
            pid = self._pid(target)
            start = self.history.record(type="fault", f=kind, target=target.node, phase="start")
            self._signal(pid, signal.SIGKILL)
            await self._sleep(duration)
            await asyncio.to_thread(self.restore)
            self.history.record(type="fault", f=kind, target=target.node, phase="end", start=start["time"])
        elif kind.startswith("pause-"):
            target = {"pause-leader": self._leader, "pause-follower": self._follower,
                      "pause-coordinator": self._active_coordinator}[kind]()
            pid = self._pid(target)
            duration = max(duration, self.session_timeout_s + 1)  # long enough for the session to expire
            start = self.history.record(type="fault", f=kind, target=target.node, phase="start")
            self._signal(pid, signal.SIGSTOP)
            self._paused.add(pid)
            await self._sleep(duration)
            self._signal(pid, signal.SIGCONT)
            self._paused.discard(pid)
            self.history.record(type="fault", f=kind, target=target.node, phase="end", start=start["time"])
        elif kind in NETWORK_FAULTS:
            await self._network_fault(kind, duration)
        elif kind == "disk-full":
            await self._disk_fault(duration)
        else:
            raise ValueError(f"unknown fault {kind}")

    async def _network_fault(self, kind: str, duration: float) -> None:
        net = self.network
        if net is None:
            raise RuntimeError("network faults need network namespaces")
        tablets = [tablet_node(s) for s in self.cluster._tablets]  # noqa: SLF001
        coordinators = [coordinator_node(i) for i in range(len(self.cluster._coordinators))]  # noqa: SLF001
        if kind == "zk-expire":
            target = self._leader().node
            duration = max(duration, self.session_timeout_s + 2)
            cut = lambda: net.cut(target, [ZK])  # noqa: E731
        elif kind == "partition-leader":
            target = self._leader().node
            cut = lambda: net.partition([target], [t for t in tablets if t != target] + coordinators)  # noqa: E731
        elif kind == "isolate-server":
            target = tablet_node(self.rng.choice(sorted(self.cluster._tablets)))  # noqa: SLF001
            cut = lambda: net.partition([target], [t for t in tablets if t != target] + coordinators + [ZK, CLIENT])  # noqa: E731
        else:  # partition-coordinator
            target = self._active_coordinator().node
            duration = max(duration, self.session_timeout_s + 2)
            cut = lambda: net.cut(target, [ZK])  # noqa: E731
        start = self.history.record(type="fault", f=kind, target=target, phase="start")
        await asyncio.to_thread(cut)
        await self._sleep(duration)
        await asyncio.to_thread(net.heal)
        self.history.record(type="fault", f=kind, target=target, phase="end", start=start["time"])

    async def _disk_fault(self, duration: float) -> None:
        if self.disk is None or self.disk_server is None:
            raise RuntimeError("disk faults need a small disk")
        target = tablet_node(self.disk_server)
        start = self.history.record(type="fault", f="disk-full", target=target, phase="start")
        await asyncio.to_thread(self.disk.fill)
        await self._sleep(max(duration, 3.0))
        await asyncio.to_thread(self.disk.free)
        self.history.record(type="fault", f="disk-full", target=target, phase="end", start=start["time"])

    def close(self) -> None:
        self.raw.close()


def wait_healthy(raw: RawRpc, tables: list[tuple[str, str]], timeout_s: float = 120.0) -> float:
    """Waits until every bucket of ``tables`` has a leader and a full ISR; returns the seconds it took."""
    t0 = time.monotonic()
    for db, table in tables:
        raw.wait_for_full_isr(db, table, timeout_s=max(1.0, timeout_s - (time.monotonic() - t0)))
    return time.monotonic() - t0
