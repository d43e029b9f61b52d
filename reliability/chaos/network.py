"""Servers in network namespaces, so the nemesis can partition a live process from some peers but not others.

Each node (coordinator or tablet server) runs in its own network namespace with one veth pair to a bridge in the
root namespace. The bridge has two addresses: ``client_ip`` (the workload and the checker talk from it) and
``zk_ip`` (ZooKeeper listens on it), so a node can be cut off from ZooKeeper and still serve clients. A cut is a
``blackhole`` route inside the node's namespace (``ip route``, no iptables needed): the node's packets to that
address go nowhere, as if the link were down in that direction; a partition between two nodes cuts both ways.
``heal()`` removes every cut. Names carry this process's id, so runs on one machine do not collide.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from collections.abc import Iterable

ZK = "zk"
CLIENT = "client"


def _ip(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    command = ["ip", "netns", "exec", ns, "ip", *args] if ns else ["ip", *args]
    return subprocess.run(command, check=check, capture_output=True, text=True)


def available() -> bool:
    """Whether this machine lets us create namespaces and veth pairs (root, iproute2)."""
    if os.geteuid() != 0:
        return False
    probe = f"fprobe{os.getpid() % 100000}"
    try:
        _ip("netns", "add", probe)
    except (OSError, subprocess.CalledProcessError):
        return False
    try:
        _ip("link", "add", f"{probe}a", "type", "veth", "peer", "name", f"{probe}b")
        _ip("link", "del", f"{probe}a")
        return True
    except subprocess.CalledProcessError:
        return False
    finally:
        _ip("netns", "del", probe, check=False)


class Network:
    def __init__(self, nodes: Iterable[str]) -> None:
        self.nodes = list(nodes)
        tag = f"{os.getpid() % 100000}"
        self.bridge = f"fb{tag}"
        self.subnet = _free_subnet()
        hosts = list(self.subnet.hosts())
        self.client_ip, self.zk_ip = str(hosts[0]), str(hosts[1])
        self.ips = {node: str(hosts[10 + i]) for i, node in enumerate(self.nodes)}
        self.namespaces = {node: f"fn{tag}x{i}" for i, node in enumerate(self.nodes)}
        self._cuts: set[tuple[str, str]] = set()
        self._up = False

    def ip_of(self, node: str) -> str:
        return {ZK: self.zk_ip, CLIENT: self.client_ip}.get(node) or self.ips[node]

    def prefix(self, node: str) -> list[str]:
        """The command prefix that runs a program in ``node``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[node]]

    def setup(self) -> Network:
        prefix = self.subnet.prefixlen
        _ip("link", "add", "name", self.bridge, "type", "bridge")
        self._up = True
        _ip("addr", "add", f"{self.client_ip}/{prefix}", "dev", self.bridge)
        _ip("addr", "add", f"{self.zk_ip}/{prefix}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i, node in enumerate(self.nodes):
            ns, host_end, ns_end = self.namespaces[node], f"{self.bridge}h{i}", f"{self.bridge}n{i}"
            _ip("netns", "add", ns)
            _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
            _ip("link", "set", ns_end, "netns", ns)
            _ip("link", "set", host_end, "master", self.bridge, "up")
            _ip("addr", "add", f"{self.ips[node]}/{prefix}", "dev", ns_end, ns=ns)
            _ip("link", "set", ns_end, "up", ns=ns)
            _ip("link", "set", "lo", "up", ns=ns)
        return self

    def teardown(self) -> None:
        for node in self.nodes:
            _ip("netns", "del", self.namespaces[node], check=False)
        if self._up:
            _ip("link", "del", self.bridge, check=False)
            self._up = False

    def __enter__(self) -> Network:
        return self.setup()

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    # ------------------------------------------------------------ faults

    def cut(self, node: str, peers: Iterable[str]) -> None:
        """``node``'s packets to ``peers`` (nodes, ZK or CLIENT) are dropped from now on."""
        for peer in peers:
            if (node, peer) not in self._cuts:
                _ip("route", "add", "blackhole", f"{self.ip_of(peer)}/32", ns=self.namespaces[node])
                self._cuts.add((node, peer))

    def partition(self, side_a: Iterable[str], side_b: Iterable[str]) -> None:
        """No packet crosses between the two sides (ZK and CLIENT may be on side B: they are cut from side A)."""
        side_a, side_b = list(side_a), list(side_b)
        for a in side_a:
            self.cut(a, side_b)
        for b in side_b:
            if b in self.namespaces:
                self.cut(b, side_a)

    def heal(self) -> None:
        for node, peer in sorted(self._cuts):
            _ip("route", "del", "blackhole", f"{self.ip_of(peer)}/32", ns=self.namespaces[node], check=False)
        self._cuts.clear()


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.200.0.0/13 that no interface of this machine uses."""
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    start = os.getpid() % 2000
    for i in range(2000):
        n = (start + i) % 2000
        net = ipaddress.ip_network(f"10.{200 + n // 250}.{n % 250}.0/24")
        if f" {str(net.network_address)[:-1]}" not in used:
            return net
    raise RuntimeError("no free 10.200.0.0/13 subnet for the nemesis network")
