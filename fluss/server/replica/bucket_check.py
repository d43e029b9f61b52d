"""The leader's check that a write was routed with the table's bucket function.

A PutKv batch, and a produce batch of a log table with a bucket key, must hold only rows whose bucket key
hashes (with the table's bucket function, ``fluss.key.bucket_function``) to the bucket the request names: a
client routing with another function (an old client on a table with Paimon bucketing, a foreign writer) would
otherwise scatter one key over several buckets, and lookups, the lake's bucket pruning and Paimon's own
writers would miss or duplicate it. The whole request for that bucket is refused with
``CORRUPT_RECORD_EXCEPTION`` naming the table, bucket, function and first stray row; nothing is written.

The check is vectorised: a PutKv batch is decoded anyway (the KV merge needs its rows); a produce batch is not,
so only its bucket-key columns are cut out of the Arrow message still compressed
(``fluss.record.ipc_projection``) and decoded. Tables without a bucket key (log tables whose rows are spread
sticky or round-robin) and tables of one bucket need no check.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.key.bucket_function import bucketing_of
from fluss.metadata import TableInfo
from fluss.record.ipc_projection import project_message
from fluss.record.log_batch import LogBatch, iter_batches


class BucketRouting:
    """How rows of one table are routed: its bucket function over its bucket-key columns."""

    def __init__(self, table: TableInfo, num_buckets: int | None = None) -> None:
        self.table = table
        self.function = bucketing_of(table)
        schema = table.row_schema.to_arrow()
        self.schema = schema
        self.key_indices = [schema.get_field_index(k) for k in table.get_bucket_keys()]
        self.key_schema = pa.schema([schema.field(i) for i in self.key_indices])
        self.num_buckets = num_buckets or table.num_buckets  # a partition's own count when given

    @property
    def needs_check(self) -> bool:
        return bool(self.key_indices) and self.num_buckets > 1

    def check_rows(self, rows: pa.RecordBatch, bucket: int, key_indices: list[int] | None = None) -> None:
        """Raises when a row of ``rows`` (the table's columns, or ``key_indices`` of them) is of another bucket."""
        if not self.needs_check or rows.num_rows == 0:
            return
        ids = self.function.bucket_ids(rows, key_indices if key_indices is not None else self.key_indices,
                                       self.num_buckets)
        stray = np.flatnonzero(ids != bucket)
        if len(stray):
            first = int(stray[0])
            key = {self.key_schema.field(j).name: rows.column(i)[first].as_py()
                   for j, i in enumerate(key_indices if key_indices is not None else self.key_indices)}
            raise FlussError(
                f"Write to bucket {bucket} of table '{self.table.table_path}' holds {len(stray)} row(s) of other "
                f"buckets (row {first}, bucket key {key}, belongs to bucket {int(ids[first])} of {self.num_buckets}): the table "
                f"routes by its '{self.function.name}' bucket function (table.bucket.function) over the bucket count "
                "of the partition (or table), the writer did not",
                ErrorCode.CORRUPT_RECORD_EXCEPTION)

    def check_records(self, records: bytes | memoryview, bucket: int) -> None:
        """The same for the log batches of a produce request, decoding only the bucket-key columns."""
        if not self.needs_check:
            return
        key_columns = list(range(len(self.key_indices)))
        for batch in iter_batches(records):
            self.check_rows(self._key_columns(batch), bucket, key_columns)

    def _key_columns(self, batch: LogBatch) -> pa.RecordBatch:
        try:
            message = project_message(batch.ipc_message(), self.schema, self.key_indices,
                                      num_rows=batch.record_count)
        except Exception:  # noqa: BLE001 - unsupported or malformed: the full decode says what is wrong
            return batch.to_arrow(self.schema).select(self.key_indices)
        try:
            return pa.ipc.read_record_batch(pa.py_buffer(message), self.key_schema)
        except (pa.ArrowException, ValueError) as e:
            raise FlussError(f"Cannot decode the bucket key of a log batch for table '{self.table.table_path}': {e}",
                             ErrorCode.CORRUPT_RECORD_EXCEPTION) from e


__all__ = ["BucketRouting"]
