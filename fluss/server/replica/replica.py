"""A bucket replica on one tablet server: its LogTablet plus leadership and in-sync-replica (ISR) state.

The leader assigns offsets and owns the high watermark: the smallest log end offset (LEO) among the ISR
(followers report theirs through the offset they fetch from). Readers never see past it.

ISR maintenance follows Kafka's rules. A follower is *caught up* when it fetches from the leader's LEO, or from
the LEO the leader had at its previous fetch. A follower not caught up for ``max_lag_ms`` is proposed for
removal; one outside the ISR that reaches the high watermark (and the start of the current leader epoch) is
proposed for addition. Proposals go to the coordinator (AdjustIsr) one at a time; while one is pending the
high watermark uses the larger of the two sets, so it never covers a record some recorded ISR member lacks.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo
from fluss.record.log_batch import parse_compression
from fluss.record.log_format import log_format_of
from fluss.server.log.config import LogConfig
from fluss.server.log.tablet import LogTablet
from fluss.server.log.validator import BatchValidator
from fluss.server.replica.bucket_check import BucketRouting
from fluss.server.replica.kv_replica import KvReplica
from fluss.table_options import (
    LOG_ARROW_COMPRESSION_TYPE,
    LOG_ARROW_COMPRESSION_ZSTD_LEVEL,
    LOG_TIERED_LOCAL_SEGMENTS,
    LOG_TTL,
    local_log_ttl_ms,
)

log = logging.getLogger(__name__)

ISR_JOIN_RETRY_MS = 1000  # after the coordinator refused a follower into the ISR


def close_kv_quietly(kv: KvReplica, bucket: TableBucket) -> None:
    """Closes a replica's KV state; a failure to flush it on the way (a full disk) is logged, never allowed to stop
    a leadership change (the next leader rebuilds the state from its snapshot and log)."""
    try:
        kv.close()
    except Exception as e:  # noqa: BLE001
        log.warning("closing the KV state of %s failed: %s", bucket, e)


def now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class FollowerProgress:
    leo: int = 0
    caught_up_ms: int = 0
    leader_leo_at_last_fetch: int = 0
    last_fetch_ms: int = 0


class Replica:
    def __init__(self, bucket: TableBucket, table: TableInfo, directory: Path, local_id: int,
                 segment_bytes: int, index_interval_bytes: int, bucket_count: int | None = None) -> None:
        """``bucket_count``: the buckets of the bucket's partition (a partition keeps the count it was created
        with when ALTER TABLE changes the table's); None: the table's."""
        self.bucket = bucket
        self.table = table
        self.directory = directory
        self.local_id = local_id
        props = table.get_properties()
        self.log_config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes,
                                    ttl_ms=LOG_TTL.value_of(props))
        self.compression = parse_compression(LOG_ARROW_COMPRESSION_TYPE.value_of(props))
        self.zstd_level = LOG_ARROW_COMPRESSION_ZSTD_LEVEL.value_of(props)
        self.name = f"table {table.table_path} bucket {bucket.bucket_id}" + (
            f" of partition {bucket.partition_id}" if bucket.partition_id is not None else "")
        self.log_format = log_format_of(props)  # body format of the batches this bucket's log stores
        self.nested_columns = [c for c in table.row_schema.columns if c.data_type.is_nested]
        self.validator = self._validator_of(table)
        self.log = LogTablet.open(directory, self.log_config, self.name)
        self.tiered_local_segments = LOG_TIERED_LOCAL_SEGMENTS.value_of(props, str(table.table_path))
        self.local_ttl_ms = local_log_ttl_ms(props, str(table.table_path))  # copied segments; -1: no TTL cleanup
        # Offsets below this are committed in remote storage (and covered by the latest committed KV snapshot of a
        # primary-key table): local segments below it may be deleted. The leader computes it (remote/manager.py);
        # followers learn it from the leader's fetch responses. -1: nothing tiered.
        self.tiered_offset = -1
        self.kv_snapshot_offset = -1  # log offset of the latest committed KV snapshot known here (-1: none)
        self.leader_id = -1
        self.leader_epoch = -1
        self.bucket_epoch = -1
        self.epoch_start_offset = 0
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.pending_isr: list[int] | None = None
        self.followers: dict[int, FollowerProgress] = {}
        self.kv: KvReplica | None = None  # the KV state, on the leader of a primary-key bucket
        self.kv_failure: str | None = None  # why the last KV recovery failed (retried in the background)
        self._joins_held_until: dict[int, int] = {}  # follower -> ms: no ISR join request on its fetches before
        self.routing = BucketRouting(table, bucket_count)  # checks that written rows belong to this bucket
        self._lock = threading.Lock()

    def _validator_of(self, table: TableInfo) -> BatchValidator:
        arrow_schema = table.row_schema.to_arrow()
        return BatchValidator(self.name, table.schema_id, arrow_schema,
                              [arrow_schema.names.index(k) for k in table.get_primary_keys()],
                              self.log_format, table.schema_column_counts)

    def update_table(self, table: TableInfo) -> None:
        """Takes a live table's new settings (ALTER TABLE): the retention of its log (``table.log.ttl``, also the
        remote log's), how long local copies of tiered segments stay (``table.log.tiered.local-segments``,
        ``table.log.local-ttl``) and a new schema id (ALTER TABLE ADD: batches of every id are accepted, the KV
        state merges with the new one)."""
        schema_changed = table.schema_id != self.table.schema_id
        self.table = table
        props = table.get_properties()
        self.log_config = replace(self.log_config, ttl_ms=LOG_TTL.value_of(props))
        self.log.config = self.log_config
        self.tiered_local_segments = LOG_TIERED_LOCAL_SEGMENTS.value_of(props, str(table.table_path))
        self.local_ttl_ms = local_log_ttl_ms(props, str(table.table_path))
        if schema_changed:
            self.nested_columns = [c for c in table.row_schema.columns if c.data_type.is_nested]
            self.validator = self._validator_of(table)
            kv = self.kv.kv if self.kv is not None else None
            if kv is not None:
                kv.update_schema(table.row_schema, table.schema_id, table.schema_column_counts)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    def make_leader(self, leader_epoch: int, bucket_epoch: int, replicas: list[int], isr: list[int]) -> None:
        with self._lock:
            new_term = leader_epoch != self.leader_epoch or not self.is_leader
            if not new_term and bucket_epoch < self.bucket_epoch:
                # read from ZooKeeper before an ISR change this leader has applied since (its AdjustIsr answer):
                # taking its older ISR could drop a member the coordinator counts, and the high watermark would
                # then pass records that member lacks (lost if it is elected)
                return
            self.leader_id = self.local_id
            self.leader_epoch = leader_epoch
            self.bucket_epoch = bucket_epoch
            self.replicas = list(replicas)
            self.isr = list(isr)
            if new_term:
                self.pending_isr = None  # same term: an ISR change in flight stays counted (maximal ISR)
                self.epoch_start_offset = self.log.log_end_offset
                self.log.epochs.assign(leader_epoch, self.epoch_start_offset)
                start = now_ms()
                self.followers = {r: FollowerProgress(caught_up_ms=start, last_fetch_ms=start)
                                  for r in replicas if r != self.local_id}
            else:  # the replica set changed (a reassignment): new followers start, removed ones are forgotten
                for r in replicas:
                    if r != self.local_id:
                        self.followers.setdefault(r, FollowerProgress(caught_up_ms=now_ms()))
                for r in [r for r in self.followers if r not in replicas]:
                    del self.followers[r]
        self.maybe_advance_high_watermark()

    def make_follower(self, leader_id: int, leader_epoch: int, bucket_epoch: int, replicas: list[int],
                      isr: list[int]) -> bool:
        """Returns True when this is a new leader term (the follower must check its log against the leader)."""
        with self._lock:
            new_term = leader_epoch != self.leader_epoch or leader_id != self.leader_id
            self.leader_id = leader_id
            self.leader_epoch = leader_epoch
            self.bucket_epoch = bucket_epoch
            self.replicas = list(replicas)
            self.isr = list(isr)
            self.pending_isr = None
            self.followers = {}
        self.close_kv()
        return new_term

    def check_leader(self) -> None:
        if not self.is_leader:
            raise FlussError(f"Tablet server {self.local_id} is not the leader of {self.bucket} "
                             f"(leader is {self.leader_id})", ErrorCode.NOT_LEADER_OR_FOLLOWER)

    # ------------------------------------------------------------ follower progress and ISR

    def check_follower_fetch(self, follower_id: int, fetch_offset: int) -> None:
        """Raises unless this is a fetch a current follower can make: from a replica of the bucket (not this
        server), at an offset inside the leader's log. Nothing is recorded before this passes."""
        if follower_id == self.local_id or follower_id not in self.followers:
            raise FlussError(f"Server {follower_id} is not a follower of {self.name} (replicas {self.replicas})",
                             ErrorCode.NOT_LEADER_OR_FOLLOWER)
        start, end = self.log.log_start_offset, self.log.log_end_offset
        if not start <= fetch_offset <= end:
            raise FlussError(f"Follower fetch offset {fetch_offset} is out of range for {self.name}: the log holds "
                             f"offsets [{start}, {end})", ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION)

    def update_follower(self, follower_id: int, fetch_offset: int) -> bool:
        """Records a follower fetch (checked by :meth:`check_follower_fetch`, which it calls); returns True if the
        high watermark moved."""
        self.check_follower_fetch(follower_id, fetch_offset)
        progress = self.followers[follower_id]
        now = now_ms()
        leader_leo = self.log.log_end_offset
        if fetch_offset >= leader_leo:
            progress.caught_up_ms = now
        elif fetch_offset >= progress.leader_leo_at_last_fetch:
            progress.caught_up_ms = max(progress.caught_up_ms, progress.last_fetch_ms)
        progress.leader_leo_at_last_fetch = leader_leo
        progress.last_fetch_ms = now
        progress.leo = fetch_offset
        return self.maybe_advance_high_watermark()

    def maximal_isr(self) -> list[int]:
        return sorted(set(self.isr) | set(self.pending_isr or ()))

    def maybe_advance_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        leos = [self.log.log_end_offset]
        leos += [self.followers[r].leo if r in self.followers else 0 for r in self.maximal_isr() if r != self.local_id]
        new_hw = min(leos)
        moved = new_hw > self.log.high_watermark
        if moved:
            self.log.update_high_watermark(new_hw)
        if self.kv is not None:
            self.kv.request_flush(self.log.high_watermark)  # on the KV executor: never blocks the caller
        return moved

    def caught_up_outside_isr(self, follower_id: int) -> bool:
        """Whether a follower outside the ISR has caught up and should join it now (Kafka's leader expands the ISR
        on the fetch that catches a follower up, not on a timer): it has everything below the high watermark and
        the start of the current leader epoch."""
        progress = self.followers.get(follower_id)
        return (self.is_leader and self.pending_isr is None and progress is not None
                and follower_id not in self.isr and now_ms() >= self._joins_held_until.get(follower_id, 0)
                and progress.leo >= max(self.log.high_watermark, self.epoch_start_offset))

    def hold_back_joins(self, followers) -> None:
        """The coordinator refused these followers into the ISR: no new request for them on their next fetches
        (the ISR timer still tries)."""
        until = now_ms() + ISR_JOIN_RETRY_MS
        for f in followers:
            self._joins_held_until[f] = until

    def propose_isr(self, max_lag_ms: int) -> list[int] | None:
        """The ISR this leader should ask for now (None if it is fine or a change is pending)."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        now = now_ms()
        hw = self.log.high_watermark
        keep = [r for r in self.isr
                if r == self.local_id or (r in self.followers and now - self.followers[r].caught_up_ms <= max_lag_ms)]
        join = [r for r, p in self.followers.items()
                if r not in self.isr and p.leo >= max(hw, self.epoch_start_offset) and now - p.last_fetch_ms <= max_lag_ms]
        proposal = sorted(set(keep) | set(join))
        if self.local_id not in proposal:
            proposal.append(self.local_id)
        return None if sorted(proposal) == sorted(self.isr) else sorted(proposal)

    def isr_changed(self, leader_epoch: int, bucket_epoch: int, isr: list[int]) -> None:
        with self._lock:
            if leader_epoch == self.leader_epoch and bucket_epoch >= self.bucket_epoch:  # not older than a notification
                self.isr = list(isr)
                self.bucket_epoch = bucket_epoch
            self.pending_isr = None
        self.maybe_advance_high_watermark()

    def close_kv(self) -> None:
        """Closes the KV state (a new leader rebuilds it); see :func:`close_kv_quietly`."""
        kv, self.kv = self.kv, None
        if kv is not None:
            close_kv_quietly(kv, self.bucket)

    def close(self) -> None:
        self.close_kv()
        self.log.close()

    def delete(self) -> None:
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)
