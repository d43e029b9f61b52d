"""KV snapshots: restore + changelog replay equals the state before, incremental uploads reuse SST files,
an interrupted upload is never used, and retention removes what no kept snapshot references."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from kv_model import SCHEMA, changelog_records, random_row, state_of, to_batch

from fluss.errors import ErrorCode, FlussError
from fluss.server.kv import snapshot as snapshots
from fluss.server.kv.snapshot import (
    create_snapshot,
    delete_old_snapshots,
    latest_snapshot,
    list_snapshots,
    restore_snapshot,
)
from fluss.server.kv.tablet import KvTablet


class Writer:
    """Drives a tablet like a replica would, keeping the changelog it appended."""

    def __init__(self, tablet: KvTablet, seed: int = 0) -> None:
        self.tablet = tablet
        self.rng = random.Random(seed)
        self.log: list[tuple[int, tuple]] = []

    def write(self, batches: int, rows: int = 200, keys: int = 500) -> None:
        for _ in range(batches):
            data = [random_row(self.rng, keys) for _ in range(rows)]
            ops = np.array([1 if self.rng.random() < 0.1 else 0 for _ in data], np.uint8)
            cl = self.tablet.prepare_batch(to_batch(data), ops, None, len(self.log))
            self.log += changelog_records(cl)
            self.tablet.flush_up_to(len(self.log))

    def replay_into(self, tablet: KvTablet, start: int) -> None:
        tail = self.log[start:]
        if tail:
            cts = np.array([ct for ct, _ in tail], np.uint8)
            tablet.apply_changelog(to_batch([r for _, r in tail]), cts, len(self.log))


@pytest.fixture
def writer(tmp_path):
    tablet = KvTablet.open(tmp_path / "leader", SCHEMA, 1, {})
    yield Writer(tablet)
    tablet.close()


@pytest.mark.parametrize("url_form", ["path", "file_url"])
def test_restore_plus_replay_equals_state_before(tmp_path, writer, url_form):
    remote = str(tmp_path / "remote")
    if url_form == "file_url":
        remote = "file://" + remote
    writer.write(5)
    handle = create_snapshot(writer.tablet, remote, 1)
    assert handle.log_offset == len(writer.log)
    writer.write(5)  # changes after the snapshot, only in the log
    before = state_of(writer.tablet.scan_all()[0])

    manifest = latest_snapshot(remote)
    assert manifest == handle
    restored = restore_snapshot(manifest, remote, tmp_path / "new-leader", SCHEMA, 1, {})
    assert restored.flushed_offset == handle.log_offset
    writer.replay_into(restored, restored.flushed_offset)
    assert state_of(restored.scan_all()[0]) == before
    assert restored.flushed_offset == len(writer.log)
    assert restored.instance_id != writer.tablet.instance_id
    restored.close()


def test_incremental_snapshot_reuses_unchanged_sst_files(tmp_path, writer):
    remote = str(tmp_path / "remote")
    writer.write(5)
    first = create_snapshot(writer.tablet, remote, 1)
    first_ssts = {f.name for f in first.files if f.name.endswith(".sst")}
    assert first_ssts and set(first.uploaded_files) >= first_ssts
    writer.write(1, rows=10)
    second = create_snapshot(writer.tablet, remote, 2)
    second_ssts = {f.name for f in second.files if f.name.endswith(".sst")}
    assert first_ssts & second_ssts
    assert set(second.reused_files) == first_ssts & second_ssts
    assert not set(second.uploaded_files) & (first_ssts & second_ssts)
    assert [s.snapshot_id for s in list_snapshots(remote)] == [1, 2]
    with pytest.raises(FlussError, match="not above"):
        create_snapshot(writer.tablet, remote, 2)


def test_interrupted_upload_is_never_used(tmp_path, writer, monkeypatch):
    remote = str(tmp_path / "remote")
    writer.write(3)
    good = create_snapshot(writer.tablet, remote, 1)
    writer.write(3)
    real_upload = snapshots._upload_file
    calls = {"n": 0}

    def failing_upload(fs, local, remote_path):
        calls["n"] += 1
        if calls["n"] > 2:
            raise OSError("connection reset while uploading")
        real_upload(fs, local, remote_path)

    monkeypatch.setattr(snapshots, "_upload_file", failing_upload)
    with pytest.raises(FlussError) as e:
        create_snapshot(writer.tablet, remote, 2)
    assert e.value.error_code == ErrorCode.KV_STORAGE_EXCEPTION
    assert calls["n"] == 3
    monkeypatch.setattr(snapshots, "_upload_file", real_upload)

    assert latest_snapshot(remote) == good  # snapshot 2 has files but no manifest
    assert (tmp_path / "remote" / "snap-2").exists()
    # A half-written manifest (e.g. a crash while writing the temp file) is not a snapshot either.
    (tmp_path / "remote" / "manifests" / ".tmp-crashed").write_text('{"format": 1, "snap')
    assert latest_snapshot(remote) == good
    restored = restore_snapshot(good, remote, tmp_path / "restore", SCHEMA, 1, {})
    assert restored.flushed_offset == good.log_offset
    restored.close()
    # Retention cleans up the leftovers of the failed upload.
    delete_old_snapshots(remote, retain=1)
    assert not (tmp_path / "remote" / "snap-2").exists()
    assert not list((tmp_path / "remote" / "manifests").glob(".tmp-*"))
    # A retry under the same id succeeds.
    retry = create_snapshot(writer.tablet, remote, 2)
    assert latest_snapshot(remote) == retry


def test_retention_keeps_the_newest_and_their_files(tmp_path, writer):
    remote = str(tmp_path / "remote")
    offsets = {}
    for sid in range(1, 5):
        writer.write(2)
        offsets[sid] = create_snapshot(writer.tablet, remote, sid).log_offset
    state_at_4 = state_of(writer.tablet.scan_all()[0])
    assert delete_old_snapshots(remote, retain=2) == [1, 2]
    kept = list_snapshots(remote)
    assert [s.snapshot_id for s in kept] == [3, 4]
    referenced = {f.path for s in kept for f in s.files}
    on_disk = {
        str(p.relative_to(tmp_path / "remote")) for p in (tmp_path / "remote").rglob("*") if p.is_file()
    } - {f"manifests/snapshot-{s.snapshot_id}.json" for s in kept}
    assert on_disk == referenced
    # The oldest retained snapshot still restores, and replay from its offset reaches the latest state.
    restored = restore_snapshot(kept[0], remote, tmp_path / "r3", SCHEMA, 1, {})
    assert restored.flushed_offset == offsets[3]
    writer.replay_into(restored, offsets[3])
    assert state_of(restored.scan_all()[0]) == state_at_4
    restored.close()
    with pytest.raises(FlussError):
        delete_old_snapshots(remote, retain=0)


def test_manifest_lists_files_with_sizes_and_offset(tmp_path, writer):
    remote = tmp_path / "remote"
    writer.write(2)
    handle = create_snapshot(writer.tablet, str(remote), 7)
    data = json.loads((remote / "manifests" / "snapshot-7.json").read_text())
    assert data["snapshot_id"] == 7 and data["log_offset"] == handle.log_offset
    for f in data["files"]:
        assert (remote / f["path"]).stat().st_size == f["size"]
    assert any(f["name"] == "CURRENT" for f in data["files"])


def test_restore_detects_a_missing_file(tmp_path, writer):
    remote = tmp_path / "remote"
    writer.write(2)
    handle = create_snapshot(writer.tablet, str(remote), 1)
    victim = next(f for f in handle.files if f.name.endswith(".sst"))
    (remote / victim.path).unlink()
    with pytest.raises(FlussError) as e:
        restore_snapshot(handle, str(remote), tmp_path / "restore", SCHEMA, 1, {})
    assert e.value.error_code == ErrorCode.KV_SNAPSHOT_NOT_EXIST
