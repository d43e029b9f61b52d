"""KV snapshots: RocksDB checkpoints of a bucket's committed state, uploaded to remote storage.

Remote layout of one bucket's snapshot directory (any fsspec URL: a local path, ``file://``, ``s3://``)::

    <remote_dir>/shared/<instance>-<NNNNNN>.sst   SST files, immutable, shared by snapshots
    <remote_dir>/snap-<id>/<file>                 the snapshot's own mutable files (MANIFEST-*, CURRENT,
                                                  OPTIONS-*, *.log, rocksdict-config.json)
    <remote_dir>/manifests/snapshot-<id>.json     the manifest, written last

``<instance>`` is the tablet's local RocksDB instance id (:attr:`KvTablet.instance_id`): SST file numbers
are unique only within one RocksDB directory, so a file is shared only between snapshots of the same
local instance. A snapshot uploads only SST files that no complete earlier snapshot references with the
same remote name and size (incremental upload); the other files are small and always uploaded.

The manifest (JSON) is the commit point. It is written to a temporary name and renamed into place after
every file is uploaded, so a reader never sees a half-written snapshot; an upload interrupted midway leaves
files but no manifest, and is never used (its orphan files are removed by :func:`delete_old_snapshots`)::

    {"format": 1, "snapshot_id": 7, "log_offset": 1234, "created_ms": ...,
     "instance_id": "...", "files": [{"name": "000012.sst", "path": "shared/...-000012.sst", "size": 5321}, ...]}

``log_offset`` is the tablet's flushed offset at the checkpoint: recovery restores the snapshot and replays
the bucket's changelog from that offset (:meth:`KvTablet.apply_changelog`).

Retention and creation for one ``remote_dir`` must run from one worker, one at a time (the tablet server's
snapshot task): :func:`delete_old_snapshots` removes every file that no retained manifest references.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fluss.errors import ErrorCode, FlussError
from fluss.fs import filesystem
from fluss.server.kv.tablet import DB_DIR, KvTablet
from fluss.types import RowSchema

if TYPE_CHECKING:  # imported on first use by fluss.fs
    import fsspec

MANIFEST_DIR = "manifests"
SHARED_DIR = "shared"
FORMAT_VERSION = 1
_MANIFEST_RE = re.compile(r"^snapshot-(\d+)\.json$")


@dataclass(frozen=True)
class SnapshotFile:
    name: str  # file name inside the RocksDB directory
    path: str  # path relative to the remote snapshot directory
    size: int


@dataclass
class SnapshotHandle:
    """A complete snapshot (its manifest) and, when just created, what the upload did."""

    snapshot_id: int
    log_offset: int
    files: list[SnapshotFile]
    instance_id: str = ""
    created_ms: int = 0
    uploaded_files: list[str] = field(default_factory=list, compare=False)
    reused_files: list[str] = field(default_factory=list, compare=False)

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    def to_json(self) -> dict:
        return {
            "format": FORMAT_VERSION,
            "snapshot_id": self.snapshot_id,
            "log_offset": self.log_offset,
            "created_ms": self.created_ms,
            "instance_id": self.instance_id,
            "files": [{"name": f.name, "path": f.path, "size": f.size} for f in self.files],
        }

    @classmethod
    def from_json(cls, data: Mapping) -> SnapshotHandle:
        if data.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported snapshot manifest format {data.get('format')!r}")
        return cls(
            snapshot_id=int(data["snapshot_id"]),
            log_offset=int(data["log_offset"]),
            files=[SnapshotFile(f["name"], f["path"], int(f["size"])) for f in data["files"]],
            instance_id=str(data.get("instance_id", "")),
            created_ms=int(data.get("created_ms", 0)),
        )


def _fs(remote_dir: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The file system of ``remote_dir`` with the process's ``s3.*`` options (``fluss.fs``)."""
    return filesystem(remote_dir)


def _manifest_path(snapshot_id: int) -> str:
    return f"{MANIFEST_DIR}/snapshot-{snapshot_id}.json"


def _upload_file(fs: fsspec.AbstractFileSystem, local: Path, remote: str) -> None:
    """Copy one local file to a remote path (a module-level seam so tests can interrupt uploads)."""
    fs.put_file(str(local), remote)


def _download_file(fs: fsspec.AbstractFileSystem, remote: str, local: Path) -> None:
    fs.get_file(remote, str(local))


def _complete_manifests(fs: fsspec.AbstractFileSystem, root: str) -> list[SnapshotHandle]:
    """Every readable manifest, oldest first."""
    mdir = f"{root}/{MANIFEST_DIR}"
    if not fs.exists(mdir):
        return []
    found = []
    for entry in fs.ls(mdir, detail=False):
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        m = _MANIFEST_RE.match(name)
        if m is None:
            continue
        try:
            with fs.open(f"{mdir}/{name}", "rb") as f:
                handle = SnapshotHandle.from_json(json.loads(f.read()))
        except (ValueError, KeyError, TypeError, OSError):
            continue  # unreadable manifest: not a complete snapshot
        if handle.snapshot_id == int(m.group(1)):
            found.append(handle)
    return sorted(found, key=lambda h: h.snapshot_id)


def create_snapshot(tablet: KvTablet, remote_dir: str, snapshot_id: int) -> SnapshotHandle:
    """Checkpoint the tablet's committed state and upload it as snapshot ``snapshot_id``.

    Raises:
        FlussError: KV_STORAGE_EXCEPTION if the snapshot id is not above the existing ones or the
            checkpoint/upload fails (then no manifest is written and the snapshot does not exist).
    """
    fs, root = _fs(remote_dir)
    previous = _complete_manifests(fs, root)
    if previous and snapshot_id <= previous[-1].snapshot_id:
        raise FlussError(
            f"snapshot id {snapshot_id} is not above the latest snapshot {previous[-1].snapshot_id} in {remote_dir}",
            ErrorCode.KV_STORAGE_EXCEPTION,
        )
    known = {(f.path, f.size) for h in previous for f in h.files if f.path.startswith(f"{SHARED_DIR}/")}
    work = Path(tempfile.mkdtemp(prefix="chk-", dir=tablet.directory))
    checkpoint = work / "checkpoint"
    try:
        log_offset = tablet.create_checkpoint(checkpoint)
        files: list[SnapshotFile] = []
        uploaded: list[str] = []
        reused: list[str] = []
        fs.makedirs(f"{root}/{SHARED_DIR}", exist_ok=True)
        fs.makedirs(f"{root}/snap-{snapshot_id}", exist_ok=True)
        for local in sorted(checkpoint.iterdir()):
            if not local.is_file():
                continue
            size = local.stat().st_size
            if local.name.endswith(".sst"):
                rel = f"{SHARED_DIR}/{tablet.instance_id}-{local.name}"
            else:
                rel = f"snap-{snapshot_id}/{local.name}"
            files.append(SnapshotFile(local.name, rel, size))
            if (rel, size) in known:
                reused.append(local.name)
                continue
            _upload_file(fs, local, f"{root}/{rel}")
            uploaded.append(local.name)
        handle = SnapshotHandle(
            snapshot_id, log_offset, files, tablet.instance_id, int(time.time() * 1000), uploaded, reused
        )
        _publish_manifest(fs, root, handle)
        return handle
    except FlussError:
        raise
    except Exception as e:
        raise FlussError(
            f"KV snapshot {snapshot_id} to {remote_dir} failed: {e}", ErrorCode.KV_STORAGE_EXCEPTION
        ) from e
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _publish_manifest(fs: fsspec.AbstractFileSystem, root: str, handle: SnapshotHandle) -> None:
    mdir = f"{root}/{MANIFEST_DIR}"
    fs.makedirs(mdir, exist_ok=True)
    tmp = f"{mdir}/.tmp-{uuid.uuid4().hex}"
    with fs.open(tmp, "wb") as f:
        f.write(json.dumps(handle.to_json(), indent=1).encode())
    fs.mv(tmp, f"{root}/{_manifest_path(handle.snapshot_id)}")


def list_snapshots(remote_dir: str) -> list[SnapshotHandle]:
    """All complete snapshots, oldest first."""
    fs, root = _fs(remote_dir)
    return _complete_manifests(fs, root)


def latest_snapshot(remote_dir: str) -> SnapshotHandle | None:
    """The newest complete snapshot (interrupted uploads have no manifest and are never returned)."""
    snapshots = list_snapshots(remote_dir)
    return snapshots[-1] if snapshots else None


def download_snapshot(manifest: SnapshotHandle, remote_dir: str, local_dir: Path) -> Path:
    """Download a snapshot into ``local_dir/db`` (replacing what is there); returns ``local_dir``.

    Raises:
        FlussError: KV_SNAPSHOT_NOT_EXIST if a file is missing or has the wrong size.
    """
    fs, root = _fs(remote_dir)
    local_dir = Path(local_dir)
    local_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="restore-", dir=local_dir))
    try:
        for f in manifest.files:
            target = staging / f.name
            try:
                _download_file(fs, f"{root}/{f.path}", target)
            except FileNotFoundError:
                raise FlussError(
                    f"file '{f.path}' of KV snapshot {manifest.snapshot_id} is missing in {remote_dir}",
                    ErrorCode.KV_SNAPSHOT_NOT_EXIST,
                ) from None
            if target.stat().st_size != f.size:
                raise FlussError(
                    f"file '{f.path}' of KV snapshot {manifest.snapshot_id} has {target.stat().st_size} bytes, "
                    f"the manifest says {f.size}",
                    ErrorCode.KV_SNAPSHOT_NOT_EXIST,
                )
        db_dir = local_dir / DB_DIR
        if db_dir.exists():
            shutil.rmtree(db_dir)
        staging.rename(db_dir)
        # A restored directory is a new RocksDB instance: its future SST files must not be confused
        # with files of the instance that made the snapshot.
        (local_dir / "kv-instance-id").unlink(missing_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return local_dir


def restore_snapshot(
    manifest: SnapshotHandle,
    remote_dir: str,
    local_dir: Path,
    schema: RowSchema,
    schema_id: int,
    properties: Mapping[str, str],
    column_counts: Sequence[int] = (),
) -> KvTablet:
    """Download a snapshot and open it as a tablet; its ``flushed_offset`` is the snapshot's log offset,
    from where the caller replays the changelog. Values of older schema ids (``column_counts``) read as the
    current schema with the added columns null."""
    download_snapshot(manifest, remote_dir, local_dir)
    tablet = KvTablet.open(Path(local_dir), schema, schema_id, properties, column_counts)
    if tablet.flushed_offset != manifest.log_offset:
        tablet.close()
        raise FlussError(
            f"KV snapshot {manifest.snapshot_id} covers log offset {tablet.flushed_offset}, its manifest says "
            f"{manifest.log_offset}",
            ErrorCode.KV_STORAGE_EXCEPTION,
        )
    return tablet


def delete_old_snapshots(remote_dir: str, retain: int) -> list[int]:
    """Keep the newest ``retain`` complete snapshots; delete older manifests and every file that no
    retained manifest references (including leftovers of interrupted uploads). Returns deleted ids."""
    if retain < 1:
        raise FlussError(
            f"must retain at least one KV snapshot, got {retain}", ErrorCode.INVALID_CONFIG_EXCEPTION
        )
    fs, root = _fs(remote_dir)
    snapshots = _complete_manifests(fs, root)
    old, kept = snapshots[:-retain], snapshots[-retain:]
    for h in old:
        fs.rm(f"{root}/{_manifest_path(h.snapshot_id)}")
    referenced = {f"{root}/{f.path}" for h in kept for f in h.files}
    kept_dirs = {f"snap-{h.snapshot_id}" for h in kept}
    for entry in fs.ls(root, detail=True) if fs.exists(root) else []:
        path = entry["name"].rstrip("/")
        name = path.rsplit("/", 1)[-1]
        if name == SHARED_DIR:
            for f in fs.ls(path, detail=False):
                if f.rstrip("/") not in referenced:
                    fs.rm(f)
        elif name.startswith("snap-") and name not in kept_dirs:
            fs.rm(path, recursive=True)
        elif name == MANIFEST_DIR:
            for f in fs.ls(path, detail=False):
                if f.rstrip("/").rsplit("/", 1)[-1].startswith(".tmp-"):
                    fs.rm(f)
    return [h.snapshot_id for h in old]


__all__ = [
    "SnapshotFile", "SnapshotHandle", "create_snapshot", "delete_old_snapshots", "download_snapshot",
    "latest_snapshot", "list_snapshots", "restore_snapshot",
]  # fmt: skip
