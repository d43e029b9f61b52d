"""What a bucket's leader stores, batch by batch, read with raw FetchLog requests (for tests of what writers send)."""

from __future__ import annotations

from fluss.record.log_batch import iter_batches
from reliability.raw import RawRpc


def stored_codecs(bootstrap_servers: str, database: str, table: str, bucket: int = 0) -> list[tuple[int, int]]:
    """``(record count, compression)`` of every batch the leader of ``bucket`` stores, in offset order."""
    with RawRpc(bootstrap_servers) as raw:
        leader = raw.wait_for_full_isr(database, table)[bucket].leader_id
        table_id = raw.table_info(database, table).table_id
        out, offset = [], 0
        while True:
            r = raw.fetch(leader, table_id, offset, bucket=bucket)
            assert r.error.code == 0, r.error
            batches = list(iter_batches(r.records, validate=True))
            if not batches:
                return out
            out += [(b.record_count, b.compression) for b in batches]
            offset = batches[-1].next_offset
