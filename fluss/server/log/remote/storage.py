"""RemoteLogStorage: the file operations of the tiered log on a remote file system (fsspec, see ``fluss.fs``).

It knows the layout (``fluss/fs/remote_log_layout.py``) and nothing about leadership or commits: uploading a
segment's files, writing and reading manifests, listing and deleting what is in a bucket's remote directory, and
reading a remote offset index. Every method is blocking (call it from a worker thread) and raises ``FlussError``
(LOG_STORAGE_EXCEPTION) naming the file when the store fails.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING

from fluss.errors import ErrorCode, FlussError
from fluss.fs import filesystem
from fluss.fs import remote_log_layout as layout
from fluss.server.log.remote.manifest import RemoteLogManifest
from fluss.server.log.tablet import SealedSegment

if TYPE_CHECKING:  # imported on first use by fluss.fs
    import fsspec


def _upload_file(fs: fsspec.AbstractFileSystem, local: Path, remote: str) -> None:
    """Copy one local file to the store (a module-level seam so tests can fail an upload midway)."""
    fs.put_file(str(local), remote)


class RemoteLogStorage:
    def __init__(self, remote_data_dir: str) -> None:
        self.remote_data_dir = remote_data_dir.rstrip("/")

    def tablet_dir(self, bucket_relative_path: str) -> str:
        return layout.remote_log_tablet_dir(self.remote_data_dir, bucket_relative_path)

    @staticmethod
    def _fs(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
        return filesystem(url)

    # -- segments -----------------------------------------------------------------------------------------------
    def upload_segment(self, tablet_dir: str, segment: SealedSegment, writer_state: bytes, leader_epochs: bytes,
                       transfer: Callable[..., object] | None = None) -> str:
        """Upload a sealed segment's files under a new segment id; returns the id.

        The five files go up at once (``transfer(fn, *args)`` runs one copy, e.g. on a transfer thread pool, and
        returns a future-like object with ``result()``; None copies inline). A directory holding only some of them
        is never read: a segment exists once a committed manifest names it."""
        segment_id = uuid.uuid4().hex
        fs, _ = self._fs(tablet_dir)
        target = layout.segment_dir(tablet_dir, segment_id)
        transfer = transfer or run_inline
        try:
            if _is_local(fs):  # object stores have no directories to make (and making one costs a request)
                fs.makedirs(self._fs(target)[1], exist_ok=True)
            jobs = []
            for suffix, data in ((layout.WRITER_STATE_FILE, writer_state), (layout.LEADER_EPOCH_FILE, leader_epochs)):
                _, path = self._fs(layout.segment_file(tablet_dir, segment_id, segment.base_offset, suffix))
                jobs.append(transfer(fs.pipe_file, path, data))
            for suffix, local in ((layout.INDEX_FILE, segment.index_path),
                                  (layout.TIME_INDEX_FILE, segment.time_index_path),
                                  (layout.LOG_FILE, segment.log_path)):
                _, path = self._fs(layout.segment_file(tablet_dir, segment_id, segment.base_offset, suffix))
                jobs.append(transfer(_upload_file, fs, local, path))
            errors = []
            for job in jobs:  # wait for every copy, even after a failure, so none outlives the attempt
                try:
                    job.result()
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)
            if errors:
                raise errors[0]
        except FlussError:
            raise
        except Exception as e:
            raise FlussError(f"Uploading log segment {segment.log_path} to {target} failed: {e}",
                             ErrorCode.LOG_STORAGE_EXCEPTION) from e
        return segment_id

    def delete_segment(self, tablet_dir: str, segment_id: str) -> None:
        fs, path = self._fs(layout.segment_dir(tablet_dir, segment_id))
        try:
            if fs.exists(path):
                fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass
        except Exception as e:
            raise FlussError(f"Deleting remote log segment {path} failed: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e

    def list_segment_ids(self, tablet_dir: str) -> set[str]:
        """The segment directories present (complete or not)."""
        fs, root = self._fs(tablet_dir)
        try:
            entries = fs.ls(root, detail=False) if fs.exists(root) else []
        except FileNotFoundError:
            return set()
        except Exception as e:
            raise FlussError(f"Listing {tablet_dir} failed: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e
        names = {e.rstrip("/").rsplit("/", 1)[-1] for e in entries}
        return {n for n in names if n != layout.METADATA_DIR}

    def read_bytes(self, url: str, start: int | None = None, end: int | None = None) -> bytes:
        fs, path = self._fs(url)
        try:
            return fs.cat_file(path, start=start, end=end)
        except FileNotFoundError:
            raise FlussError(f"Remote file {url} does not exist", ErrorCode.LOG_STORAGE_EXCEPTION) from None
        except Exception as e:
            raise FlussError(f"Reading remote file {url} failed: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e

    # -- manifests ----------------------------------------------------------------------------------------------
    def write_manifest(self, tablet_dir: str, manifest: RemoteLogManifest) -> str:
        """Write a new manifest file (a new name each time); returns its URL."""
        url = layout.manifest_file(tablet_dir, uuid.uuid4().hex)
        fs, path = self._fs(url)
        try:
            fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            fs.pipe_file(path, manifest.to_bytes())
        except Exception as e:
            raise FlussError(f"Writing remote log manifest {url} failed: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e
        return url

    def read_manifest(self, url: str) -> RemoteLogManifest:
        return RemoteLogManifest.from_bytes(self.read_bytes(url), url)

    def delete_manifest(self, url: str) -> None:
        fs, path = self._fs(url)
        try:
            fs.rm_file(path)
        except FileNotFoundError:
            pass
        except Exception as e:
            raise FlussError(f"Deleting remote log manifest {url} failed: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e

    def list_manifests(self, tablet_dir: str) -> list[str]:
        fs, root = self._fs(layout.manifest_dir(tablet_dir))
        try:
            entries = fs.ls(root, detail=False) if fs.exists(root) else []
        except FileNotFoundError:
            return []
        scheme_prefix = tablet_dir[: tablet_dir.index("://") + 3] if "://" in tablet_dir else ""
        return [scheme_prefix + e.rstrip("/") for e in entries if e.endswith(layout.MANIFEST_SUFFIX)]

    def delete_tablet_dir(self, tablet_dir: str) -> None:
        """Everything of a bucket (its table or partition was dropped)."""
        fs, path = self._fs(tablet_dir)
        try:
            if fs.exists(path):
                fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass


def _is_local(fs: fsspec.AbstractFileSystem) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return "file" in protocol or "local" in protocol


def run_inline(fn: Callable[..., object], *args: object):
    """A ``transfer`` that runs the copy at once (returns an object whose ``result()`` is the return value)."""

    class _Done:
        def __init__(self, value: object = None, error: BaseException | None = None) -> None:
            self.value, self.error = value, error

        def result(self) -> object:
            if self.error is not None:
                raise self.error
            return self.value

    try:
        return _Done(fn(*args))
    except Exception as e:  # noqa: BLE001 - raised by result(), as a future would
        return _Done(error=e)


def executor_transfer(executor: Executor) -> Callable[..., object]:
    return lambda fn, *args: executor.submit(fn, *args)
