"""A short nemesis run (``make chaos`` runs the long one): writers and readers under process kills, pauses and,
where the machine allows, ZooKeeper session expiry of a live leader and a full disk; the checker finds no lost,
duplicated or reordered acknowledged writes and no lost reads."""

from __future__ import annotations

from reliability.chaos.runner import RunConfig, run


def test_no_acknowledged_write_is_lost_under_the_nemesis(tmp_path):
    report = run(RunConfig(duration_s=14, seed=7, output=tmp_path,
                           faults=["kill-leader", "pause-follower", "zk-expire", "disk-full"],
                           interval_s=(0.5, 1.5), fault_duration_s=(1.5, 3.0)))
    assert report["valid"], (report["anomalies"], report["output"])
    assert report["log"]["acked_rows"] > 0 and report["kv"].get("upsert_ok", 0) > 0
    assert report["log"]["rows_read"] > 0 and report["kv"]["lookups_found"] > 0
    assert sum(report["faults_injected"].values()) >= 2, report["faults_injected"]
    assert (tmp_path / "history.jsonl").stat().st_size > 0 and (tmp_path / "report.json").exists()
