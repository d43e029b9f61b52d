"""Ports of a LocalCluster: chosen where no outgoing connection can take them, and a start that loses a port to
another program before its server binds it starts again on fresh ports."""

from __future__ import annotations

import json
import os
import socket

import pytest

from fluss.server import cluster as cluster_module
from fluss.server.cluster import LocalCluster
from fluss.server.zk import local_server
from fluss.server.zk.local_server import LocalZooKeeper, _ephemeral_port_range, free_port


def test_free_ports_are_outside_the_ephemeral_range_distinct_and_bindable():
    low, high = _ephemeral_port_range()
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert all(not low <= p <= high for p in ports), [p for p in ports if low <= p <= high]
    for p in ports[:20]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_a_cluster_whose_coordinator_port_is_taken_starts_again_on_fresh_ports(monkeypatch: pytest.MonkeyPatch):
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", free_port()))
    squatter.listen()
    taken = squatter.getsockname()[1]
    handed = iter([taken])
    monkeypatch.setattr(cluster_module, "free_port", lambda: next(handed, None) or free_port())
    try:
        with LocalCluster(tablet_servers=1) as cluster:
            coordinator_port = int(cluster.bootstrap_servers.rsplit(":", 1)[1])
            assert coordinator_port != taken
            nodes = cluster.server_nodes()
            assert nodes is not None and {n.server_type for n in nodes} == {"CoordinatorServer", "TabletServer"}
            first_attempt = (cluster.logs_dir / "coordinator-0.log").read_text(errors="replace")
            assert f"Cannot bind listener FLUSS://127.0.0.1:{taken}" in first_attempt
    finally:
        squatter.close()


def test_a_cluster_whose_metrics_port_is_taken_starts_again_on_fresh_ports(monkeypatch: pytest.MonkeyPatch):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", free_port()))
        squatter.listen()
        taken = squatter.getsockname()[1]
        calls = iter(range(10**6))
        # the second port asked for is the coordinator's metrics port (its listener's comes first)
        monkeypatch.setattr(cluster_module, "free_port", lambda: taken if next(calls) == 1 else free_port())
        with LocalCluster(tablet_servers=1, metrics=True) as cluster:
            endpoint = cluster.metrics_endpoints()["coordinator-0"]
            assert endpoint != f"127.0.0.1:{taken}"
            assert cluster.server_nodes() is not None
            first_attempt = (cluster.logs_dir / "coordinator-0.log").read_text(errors="replace")
            assert f"Cannot serve Prometheus metrics: no free port in {taken}" in first_attempt


def test_a_fixed_port_that_is_taken_is_refused_without_retrying(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", free_port()))
        squatter.listen()
        with pytest.raises(RuntimeError, match=f"port {squatter.getsockname()[1]} .* already in use"):
            LocalCluster(tablet_servers=1, directory=tmp_path, port=squatter.getsockname()[1]).start()


def test_a_zookeeper_whose_port_is_taken_starts_again_on_a_fresh_port(tmp_path, monkeypatch: pytest.MonkeyPatch):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", free_port()))
        squatter.listen()
        taken = squatter.getsockname()[1]
        real_free_port = local_server.free_port
        handed = iter([taken])
        monkeypatch.setattr(local_server, "free_port", lambda host="127.0.0.1": next(handed, None) or real_free_port(host))
        zookeeper = LocalZooKeeper(tmp_path / "zk")
        assert zookeeper.port == taken
        try:
            zookeeper.start()
            assert zookeeper.port != taken and zookeeper.is_ok()
            assert "Address already in use" in (tmp_path / "zk" / "zookeeper.log").read_text(errors="replace")
        finally:
            zookeeper.stop()


def test_a_forked_child_does_not_pick_the_ports_its_parent_picks_next():
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write_end, json.dumps([free_port() for _ in range(5)]).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(write_end)
    child_ports = json.loads(os.read(read_end, 4096))
    os.close(read_end)
    assert child_ports != [free_port() for _ in range(5)]
