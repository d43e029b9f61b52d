"""Where a bucket's tiered log lives in remote storage (the spec; the Java connector follows it too).

::

    <remote.data.dir>/log/<db>/<table>-<table_id>/[<partition>-p<partition_id>/]bucket-<n>/   remote log tablet dir
        <segment_id>/<base:020d>.log           the sealed local segment file, byte for byte (log batches)
        <segment_id>/<base:020d>.index         its offset index        (see docs/log-format.md)
        <segment_id>/<base:020d>.timeindex     its time index
        <segment_id>/<base:020d>.writer_state  idempotent-writer state at the segment's end offset (JSON)
        <segment_id>/<base:020d>.leader_epoch  leader-epoch entries covering the segment (JSON)
        metadata/<uuid>.manifest               remote log manifests (JSON); ZooKeeper names the committed one

``<segment_id>`` is a fresh UUID per upload, so a retried or concurrent upload of the same offsets never
overwrites files a committed manifest points at. The ``.log`` file is uploaded last: a segment directory without
it is incomplete. A segment is part of the remote log only once a manifest naming it is committed.

Readers (clients, the Java connector) get the tablet dir, segment ids and offsets in FetchLog responses and read
``<tablet dir>/<segment_id>/<start_offset:020d>.log``.
"""

from __future__ import annotations

from fluss.fs import join

LOG_DIR = "log"
METADATA_DIR = "metadata"
MANIFEST_SUFFIX = ".manifest"

LOG_FILE = ".log"
INDEX_FILE = ".index"
TIME_INDEX_FILE = ".timeindex"
WRITER_STATE_FILE = ".writer_state"
LEADER_EPOCH_FILE = ".leader_epoch"

#: The files of an uploaded segment.
SEGMENT_FILES = (LOG_FILE, INDEX_FILE, TIME_INDEX_FILE, WRITER_STATE_FILE, LEADER_EPOCH_FILE)


def remote_log_tablet_dir(remote_data_dir: str, bucket_relative_path: str) -> str:
    """The bucket's remote log directory; ``bucket_relative_path`` is ``<db>/<table>-<id>/[...]/bucket-<n>``."""
    return join(remote_data_dir, LOG_DIR, bucket_relative_path)


def segment_dir(tablet_dir: str, segment_id: str) -> str:
    return join(tablet_dir, segment_id)


def segment_file(tablet_dir: str, segment_id: str, start_offset: int, suffix: str = LOG_FILE) -> str:
    """``<tablet dir>/<segment_id>/<start_offset:020d><suffix>``."""
    return join(tablet_dir, segment_id, f"{start_offset:020d}{suffix}")


def manifest_dir(tablet_dir: str) -> str:
    return join(tablet_dir, METADATA_DIR)


def manifest_file(tablet_dir: str, manifest_id: str) -> str:
    return join(tablet_dir, METADATA_DIR, manifest_id + MANIFEST_SUFFIX)
