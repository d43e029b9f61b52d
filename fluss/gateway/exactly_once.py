"""Exactly-once writes for requests with an ``Idempotency-Key``, across gateway instances and gateway crashes.

The problem: a gateway can die after its write reached the cluster but before it answered; the caller retries
on another instance, which cannot know whether the rows are already there. Recording the key somewhere after
the write leaves exactly that window open, and the rows carry nothing to recognise them by. So the storage has
to deduplicate - and Fluss already does, for idempotent writers: every batch carries a writer id and a
per-bucket batch sequence, and a bucket leader answers a batch it has already appended with its earlier offset
instead of appending it again (``fluss.server.log.writer_state``).

The protocol, per (table, key), with the state kept in the cluster (two primary-key tables of the ledger
database, created on first use), never in a gateway:

1. ``write_outcomes[table, key]`` holds the answer of a completed write: if present, it is returned as is
   (``replayed: true``) - provided the request body is the same (its SHA-256), else 409.
2. The gateway allocates a writer id (InitWriter) and upserts ``write_claims[table, key] = (writer id, body
   digest)`` with acks=all. The claims table uses the ``first_row`` merge engine, so the first claim wins for
   ever; a lookup then gives every attempt the same writer id.
3. The rows are encoded deterministically - one batch per (partition, bucket) holding all the request's rows for
   it, in request order; bucket from the bucket key, or for a log table without one, from a hash of the key -
   stamped with the claimed writer id and batch sequence 0, and sent to the bucket leaders (retrying retriable
   errors until ``request-timeout``). A batch an earlier attempt already appended is answered as a duplicate.
4. The answer is upserted into ``write_outcomes`` and sent.

Whatever step an attempt died in, the next attempt converges on the same writer id and the same batches, so
every row is written once. Two attempts at once do too (the leader deduplicates the second batch).

Why this module does not use the public writer API: ``AppendWriter``/``UpsertWriter`` allocate their own
writer id and choose buckets and batch boundaries per process, so an attempt on another instance would produce
different batches. The writer id has to outlive the gateway that allocated it. So this module builds the
batches itself with the shared record-format and bucketing modules (``fluss.record.log_batch``,
``fluss.key``: cross-language contracts) and sends them through the connection's cluster client
(``FlussConnection.cluster`` / ``run``), the one place the gateway goes below the public API. The ledger
itself is written and read with the public API (``UpsertWriter``, ``Lookuper``).

Limits: the writer state a leader keeps grows by one writer per keyed request and bucket (it has no expiry
yet); ledger rows are kept until the ledger tables are dropped. Both are noted in ``docs/gateway.md``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

import fluss
from fluss.errors import ErrorCode, FlussError
from fluss.gateway.clusters import CachedTable, ClusterClients
from fluss.gateway.errors import FAILED_PRECONDITION, GatewayError, from_fluss, invalid
from fluss.gateway.write_plan import WritePlan
from fluss.key.bucketing import bucket_ids
from fluss.key.partition import name_to_spec, partition_name_array
from fluss.metadata import TableBucket
from fluss.record.log_batch import COMPRESSION_MIN_BATCH_BYTES, build_batch, parse_compression
from fluss.rpc.errors import to_error
from fluss.rpc.gen import fluss_api_pb2 as pb

log = logging.getLogger(__name__)

CLAIMS_TABLE = "write_claims"
OUTCOMES_TABLE = "write_outcomes"
#: The longest Idempotency-Key accepted.
MAX_KEY_LENGTH = 256
_LEDGER_KEY = [("table_path", pa.string()), ("idempotency_key", pa.string())]


def _ledger_schemas() -> dict[str, tuple[pa.Schema, dict[str, str]]]:
    key = [pa.field(n, t, nullable=False) for n, t in _LEDGER_KEY]
    return {
        CLAIMS_TABLE: (pa.schema([*key, pa.field("writer_id", pa.int64()), pa.field("body_sha256", pa.string()),
                                  pa.field("claimed_ms", pa.int64())]),
                       {"table.merge-engine": "first_row"}),
        OUTCOMES_TABLE: (pa.schema([*key, pa.field("body_sha256", pa.string()), pa.field("response", pa.string()),
                                    pa.field("written_ms", pa.int64())]), {}),
    }


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise invalid(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters")
    return key


def body_digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


@dataclass
class Ledger:
    """The ledger tables of one cluster, through the public client API."""

    clients: ClusterClients
    database: str
    _ready: bool = False

    async def _ensure(self) -> None:
        if self._ready:
            return
        admin = await self.clients.admin()
        await admin.create_database(self.database, ignore_if_exists=True)
        for name, (schema, props) in _ledger_schemas().items():
            descriptor = fluss.TableDescriptor(fluss.Schema(schema, [n for n, _ in _LEDGER_KEY]), properties=props,
                                               comment="fluss gateway: exactly-once write ledger")
            await admin.create_table(fluss.TablePath(self.database, name), descriptor, ignore_if_exists=True)
        self._ready = True

    async def _table(self, name: str) -> CachedTable:
        await self._ensure()
        return await self.clients.table(fluss.TablePath(self.database, name))

    async def _lookup(self, name: str, key: dict) -> dict | None:
        entry = await self._table(name)
        lookuper = await self.clients.shared(entry, ("lookup",), lambda: entry.table.new_lookup().create_lookuper())
        return await lookuper.lookup(key)

    async def _upsert(self, name: str, row: dict) -> None:
        entry = await self._table(name)
        writer = await self.clients.shared(entry, ("upsert", None), lambda: entry.table.new_upsert().create_writer())
        batch = pa.RecordBatch.from_pylist([row], schema=entry.info.row_schema.to_arrow())
        handle = await asyncio.to_thread(writer.upsert_arrow_batch, batch)
        await handle.wait()

    async def outcome(self, table: str, key: str) -> dict | None:
        return await self._lookup(OUTCOMES_TABLE, {"table_path": table, "idempotency_key": key})

    async def record_outcome(self, table: str, key: str, digest: str, response: dict) -> None:
        await self._upsert(OUTCOMES_TABLE, {"table_path": table, "idempotency_key": key, "body_sha256": digest,
                                            "response": orjson.dumps(response).decode(),
                                            "written_ms": int(time.time() * 1000)})

    async def claim(self, table: str, key: str, writer_id: int, digest: str) -> dict:
        """The claim of (table, key): ours, or the one an earlier attempt made (first_row keeps the first)."""
        ident = {"table_path": table, "idempotency_key": key}
        await self._upsert(CLAIMS_TABLE, {**ident, "writer_id": writer_id, "body_sha256": digest,
                                          "claimed_ms": int(time.time() * 1000)})
        claimed = await self._lookup(CLAIMS_TABLE, ident)
        if claimed is None:  # the claim was acknowledged, so it must be readable
            raise GatewayError("backend", f"the write claim of key '{key}' is not readable after it was written")
        return claimed


def _reused(key: str) -> GatewayError:
    return GatewayError(FAILED_PRECONDITION, f"Idempotency-Key '{key}' was already used for a different request "
                        "to this table (the body differs): use a new key for a new request")


async def write_once(clients: ClusterClients, ledger: Ledger, entry: CachedTable, plan: WritePlan, key: str,
                     digest: str, build_response) -> tuple[dict, bool]:
    """Writes ``plan`` exactly once under ``key``; the response (``build_response()`` of this attempt, or the
    stored one of an earlier completed attempt) and whether it is a replay."""
    table = str(entry.info.table_path)
    try:
        done = await ledger.outcome(table, key)
        if done is not None:
            if done["body_sha256"] != digest:
                raise _reused(key)
            return orjson.loads(done["response"]), True
        conn = await clients.connection()
        fresh_id = (await conn.run(conn.cluster.admin_call("InitWriter", pb.InitWriterRequest()))).writer_id
        claim = await ledger.claim(table, key, fresh_id, digest)
        if claim["body_sha256"] != digest:
            raise _reused(key)
        await _send(conn, entry.info, plan, int(claim["writer_id"]), key)
        response = build_response()
        await ledger.record_outcome(table, key, digest, response)
        return response, False
    except FlussError as e:
        await clients.on_error(entry.info.table_path, e)
        raise from_fluss(e) from None


# ------------------------------------------------------------------------------------------------ batches

def _buckets(info: fluss.TableInfo, batch: pa.RecordBatch, key: str, num_buckets: int) -> np.ndarray:
    keys = info.get_bucket_keys()
    if keys:
        names = info.get_column_names()
        return bucket_ids(batch, [names.index(k) for k in keys], num_buckets)
    # no bucket key: every row of the request into one bucket chosen by the key, the same on every attempt
    return np.full(batch.num_rows, zlib.crc32(key.encode()) % num_buckets, dtype=np.int32)


def partition_names(info: fluss.TableInfo, plan: WritePlan) -> set[str]:
    """The partitions the rows of ``plan`` go to (none for a table that is not partitioned)."""
    if not info.is_partitioned():
        return set()
    names = info.get_column_names()
    return set(partition_name_array(plan.batch, [names.index(k) for k in info.get_partition_keys()]).to_pylist())


def encode_batches(info: fluss.TableInfo, plan: WritePlan, writer_id: int, key: str,
                   bucket_counts: Mapping[str, int] | None = None) -> dict[tuple[str | None, int], bytes]:
    """One log batch per (partition name, bucket) with all of the request's rows for it, in request order,
    stamped with ``writer_id`` and batch sequence 0. Deterministic: the same plan and key give the same
    batches on every gateway. ``bucket_counts``: each partition's own bucket count (the table's by default)."""
    batch = plan.batch
    change_types = plan.change_types
    props = info.get_properties()
    compression = parse_compression(props.get("table.log.arrow.compression.type", "ZSTD"))
    zstd_level = int(props.get("table.log.arrow.compression.zstd.level", "3"))
    names = info.get_column_names()
    if info.is_partitioned():
        partitions = partition_name_array(batch, [names.index(k) for k in info.get_partition_keys()])
        part_codes = pc.dictionary_encode(partitions)
        part_names = part_codes.dictionary.to_pylist()
        part_index = part_codes.indices.to_numpy(zero_copy_only=False)
    else:
        part_names, part_index = [None], np.zeros(batch.num_rows, dtype=np.int64)
    counts = [(bucket_counts or {}).get(p) or info.num_buckets if p is not None else info.num_buckets
              for p in part_names]
    stride = max(counts)
    if len(set(counts)) == 1:
        buckets = _buckets(info, batch, key, counts[0])
    else:  # partitions of different bucket counts (ALTER TABLE SET bucket.num): each by its own
        buckets = np.empty(batch.num_rows, dtype=np.int64)
        for code, n in enumerate(counts):
            idx = np.flatnonzero(part_index == code)
            if len(idx):
                buckets[idx] = _buckets(info, batch.take(pa.array(idx)), key, n)
    group = part_index.astype(np.int64) * stride + buckets
    out: dict[tuple[str | None, int], bytes] = {}
    order = np.argsort(group, kind="stable")
    sorted_groups = group[order]
    bounds = np.flatnonzero(np.diff(sorted_groups)) + 1
    for rows in np.split(order, bounds):
        if not len(rows):
            continue
        g = int(group[rows[0]])
        piece = batch.take(pa.array(rows))
        out[(part_names[g // stride], g % stride)] = build_batch(
            piece, schema_id=info.schema_id, compression=compression, zstd_level=zstd_level,
            change_types=None if change_types is None else change_types[rows], writer_id=writer_id,
            batch_sequence=0, min_compressed_bytes=COMPRESSION_MIN_BATCH_BYTES)
    return out


async def _partitions(conn: fluss.FlussConnection, info: fluss.TableInfo, names: set[str]
                      ) -> dict[str, fluss.PartitionInfo]:
    """The partitions ``names`` (created when missing and the writer may create them), with their ids and own
    bucket counts."""
    if not names:
        return {}
    admin = conn.get_admin()
    known = {p.partition_name: p for p in await admin.list_partition_infos(info.table_path)}
    missing = names - set(known)
    if missing:
        if not conn.config.writer_dynamic_create_partition_enabled:
            raise FlussError(f"partition(s) {sorted(missing)} of '{info.table_path}' do not exist",
                             ErrorCode.PARTITION_NOT_EXISTS)
        keys = info.get_partition_keys()
        for name in sorted(missing):
            await admin.create_partition(info.table_path, name_to_spec(name, keys), ignore_if_exists=True)
        known = {p.partition_name: p for p in await admin.list_partition_infos(info.table_path)}
    return {n: known[n] for n in names}


async def _send(conn: fluss.FlussConnection, info: fluss.TableInfo, plan: WritePlan, writer_id: int,
                key: str) -> None:
    parts = await _partitions(conn, info, partition_names(info, plan))
    counts = {name: p.bucket_count or info.num_buckets for name, p in parts.items()}
    batches = await asyncio.to_thread(encode_batches, info, plan, writer_id, key, counts)
    pending = {TableBucket(info.table_id, bucket, None if p is None else parts[p].partition_id): data
               for (p, bucket), data in batches.items()}
    await conn.run(_deliver(conn, info, plan, pending))


async def _deliver(conn: fluss.FlussConnection, info: fluss.TableInfo, plan: WritePlan,
                   pending: dict[TableBucket, bytes]) -> None:
    """Sends the batches to their leaders until each is appended (or found appended); runs on the client's
    I/O loop. Retriable errors refresh the metadata and retry until ``request-timeout``."""
    client = conn.cluster
    acks = -1 if str(conn.config.writer_acks).lower() in ("all", "-1") else int(conn.config.writer_acks)
    kv = info.has_primary_key()
    method = "PutKv" if kv else "ProduceLog"
    deadline = time.monotonic() + client.request_timeout_s
    targets = plan.target_indices() or []
    attempt = 0
    last: FlussError | None = None
    while pending:
        meta = await client.table(info.table_path, refresh=attempt > 0)
        if meta.info.table_id != info.table_id:
            raise FlussError(f"table '{info.table_path}' was recreated during the write", ErrorCode.TABLE_NOT_EXIST)
        pids = sorted({tb.partition_id for tb in pending if tb.partition_id is not None})
        if pids and (attempt > 0 or any(tb not in meta.leaders for tb in pending)):
            await client.update_metadata([info.table_path], partition_ids=pids)
            meta = client.tables[info.table_path]
        by_leader: dict[str, list[TableBucket]] = {}
        for tb in pending:
            address = client.leader_address(meta, tb)
            if address is None:
                last = FlussError(f"no leader for {tb}", ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
                continue
            by_leader.setdefault(address, []).append(tb)
        timeout_ms = int(max(1.0, deadline - time.monotonic()) * 1000)
        results = await asyncio.gather(*(
            _call(client, address, method, acks, info.table_id, timeout_ms, targets, tbs, pending)
            for address, tbs in by_leader.items()))
        for answers in results:
            for tb, err in answers.items():
                if err is None:
                    pending.pop(tb, None)
                elif not err.is_retriable:
                    raise err
                else:
                    last = err
        if pending:
            attempt += 1
            if time.monotonic() > deadline:
                raise last or FlussError(f"write to '{info.table_path}' timed out", ErrorCode.REQUEST_TIME_OUT)
            await asyncio.sleep(min(1.0, 0.05 * attempt))


async def _call(client, address: str, method: str, acks: int, table_id: int, timeout_ms: int, targets: list[int],
                tbs: list[TableBucket], pending: dict[TableBucket, bytes]) -> dict[TableBucket, FlussError | None]:
    if method == "PutKv":
        request = pb.PutKvRequest(acks=acks, table_id=table_id, timeout_ms=timeout_ms, target_columns=targets,
                                  buckets=[pb.PutKvBucketPb(partition_id=tb.partition_id_or_none_value,
                                                            bucket_id=tb.bucket_id, records=pending[tb])
                                           for tb in tbs])
    else:
        request = pb.ProduceLogRequest(acks=acks, table_id=table_id, timeout_ms=timeout_ms,
                                       buckets=[pb.ProduceBucketPb(partition_id=tb.partition_id_or_none_value,
                                                                   bucket_id=tb.bucket_id, records=pending[tb])
                                                for tb in tbs])
    try:
        response = await client.tablet_call(address, method, request, timeout_ms / 1000 + 5)
    except FlussError as e:
        return dict.fromkeys(tbs, e)
    out: dict[TableBucket, FlussError | None] = {}
    for r in response.buckets:
        out[TableBucket(table_id, r.bucket_id, r.partition_id)] = to_error(r.error)
    for tb in tbs:
        out.setdefault(tb, FlussError(f"no result for {tb}", ErrorCode.NETWORK_EXCEPTION))
    return out
