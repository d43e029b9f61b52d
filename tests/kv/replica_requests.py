"""The requests the in-process ReplicaManager tests send: a one-bucket primary-key table (key ``k``, value ``v``),
NotifyLeaderAndIsr as the coordinator sends it, and PutKv of upserts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fluss.metadata import Schema, TableBucket, TableDescriptor, TableInfo, TablePath
from fluss.record.change_type import ChangeType
from fluss.record.log_batch import build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
INFO = TableInfo(TablePath("db", "kv"), 7, 1, TableDescriptor(Schema(SCHEMA, primary_keys=["k"]), bucket_count=1),
                 0, 0)
TB = TableBucket(7, 0)


def notify(leader: int, epoch: int, replicas: list[int]) -> pb.NotifyLeaderAndIsrRequest:
    """Bucket 0 of the table led by ``leader`` in ``epoch`` (leader and bucket epoch), all ``replicas`` in sync."""
    return pb.NotifyLeaderAndIsrRequest(coordinator_epoch=1, table_infos=[INFO.to_pb()], buckets=[pb.LeaderAndIsrPb(
        table_id=7, partition_id=-1, bucket_id=0, leader=leader, leader_epoch=epoch, replicas=replicas,
        isr=replicas, bucket_epoch=epoch)])


def put(keys: list[int]) -> pb.PutKvRequest:
    """Upserts of ``keys`` with their decimal strings as values (acks=1)."""
    rb = pa.record_batch([pa.array(keys, pa.int64()), pa.array([str(k) for k in keys])], schema=SCHEMA)
    records = build_batch(rb, schema_id=1, change_types=np.full(len(keys), ChangeType.UpdateAfter, np.uint8))
    return pb.PutKvRequest(acks=1, table_id=7, buckets=[pb.PutKvBucketPb(partition_id=-1, bucket_id=0,
                                                                          records=records)])
