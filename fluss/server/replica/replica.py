"""A bucket replica on one tablet server: its LogTablet plus leadership state.

The leader assigns offsets and owns the high watermark: the smallest log end offset among the in-sync
replicas (followers report theirs through the fetch offset they ask for). Readers never see past it.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from fluss.config_values import parse_duration_ms, parse_int
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo
from fluss.record.log_batch import parse_compression
from fluss.server.log.config import LogConfig
from fluss.server.log.tablet import LogTablet

DEFAULT_TTL = "7d"


class Replica:
    def __init__(self, bucket: TableBucket, table: TableInfo, directory: Path, local_id: int,
                 segment_bytes: int, index_interval_bytes: int) -> None:
        self.bucket = bucket
        self.table = table
        self.directory = directory
        self.local_id = local_id
        props = table.get_properties()
        ttl = props.get("table.log.ttl", DEFAULT_TTL)
        self.log_config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes,
                                    ttl_ms=parse_duration_ms(ttl, "table.log.ttl") if ttl not in ("-1", "") else -1)
        self.compression = parse_compression(props.get("table.log.arrow.compression.type", "ZSTD"))
        self.zstd_level = parse_int(props.get("table.log.arrow.compression.zstd.level", "3"))
        self.log = LogTablet.open(directory, self.log_config)
        self.leader_id = -1
        self.leader_epoch = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.follower_leo: dict[int, int] = {}
        self._lock = threading.Lock()

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    def make_leader(self, leader_epoch: int, replicas: list[int], isr: list[int]) -> None:
        with self._lock:
            self.leader_id = self.local_id
            self.leader_epoch = leader_epoch
            self.replicas = list(replicas)
            self.isr = list(isr)
            self.follower_leo = {r: self.follower_leo.get(r, 0) for r in replicas if r != self.local_id}
        self.maybe_advance_high_watermark()

    def make_follower(self, leader_id: int, leader_epoch: int, replicas: list[int], isr: list[int]) -> None:
        with self._lock:
            self.leader_id = leader_id
            self.leader_epoch = leader_epoch
            self.replicas = list(replicas)
            self.isr = list(isr)
            self.follower_leo = {}

    def check_leader(self) -> None:
        if not self.is_leader:
            raise FlussError(f"Tablet server {self.local_id} is not the leader of {self.bucket} "
                             f"(leader is {self.leader_id})", ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def update_follower_leo(self, follower_id: int, leo: int) -> bool:
        """Records a follower's log end offset; returns True if the high watermark moved."""
        if follower_id not in self.follower_leo:
            raise FlussError(f"Server {follower_id} is not a follower of {self.bucket}",
                             ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.follower_leo[follower_id] = leo
        return self.maybe_advance_high_watermark()

    def maybe_advance_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        leos = [self.log.log_end_offset]
        leos += [self.follower_leo.get(r, 0) for r in self.isr if r != self.local_id]
        new_hw = min(leos)
        if new_hw > self.log.high_watermark:
            self.log.update_high_watermark(new_hw)
            return True
        return False

    def close(self) -> None:
        self.log.close()

    def delete(self) -> None:
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)
