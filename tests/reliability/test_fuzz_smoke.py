"""A short run of the protocol fuzzer (``make fuzz`` runs the long one): every RPC of every service gets random
and mutated requests; the servers stay up, answer each in time, and the protected data is intact."""

from __future__ import annotations

from reliability.fuzz.runner import SERVICES, FuzzConfig, run


def test_fuzzed_requests_get_clear_answers_and_leave_the_data_intact():
    report = run(FuzzConfig(requests=500, seed=12))
    assert report["violations"]["count"] == 0, report["violations"]
    assert all(report["servers_alive"].values()) and report["tablet_servers_registered"] == [0, 1, 2]
    assert report["protected_data"]["intact"], report["protected_data"]
    assert report["protected_data"]["after"]["events"]["rows"] == 3000
    assert report["protected_data"]["after"]["state"]["rows"] == 500
    assert report["scratch_table_readable"]
    assert len(report["per_method"]) == sum(len(s.methods) for s in SERVICES.values())
    assert report["error_codes"].get("CORRUPT_RECORD_EXCEPTION", 0) > 0  # corrupt batches reached the leaders
    assert "UNKNOWN_SERVER_ERROR" not in report["error_codes"], report["error_codes"]
    assert report["valid"]


def test_the_report_goes_into_a_directory_given_as_out_or_to_the_file_named(tmp_path):
    from reliability.fuzz.runner import write_report

    assert write_report({"valid": True}, tmp_path) == tmp_path / "report.json"
    assert (tmp_path / "report.json").read_text().strip().startswith("{")
    named = write_report({"valid": True}, tmp_path / "sub" / "fuzz.json")
    assert named == tmp_path / "sub" / "fuzz.json" and named.is_file()
