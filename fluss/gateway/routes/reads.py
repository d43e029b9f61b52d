"""Reads, which FIP-49's gateway leaves to native clients: point and prefix lookups, bounded log scans from
given offsets (or a timestamp), and union read of lake-enabled tables. All stateless: a scan returns the next
offsets of every bucket, and the caller passes them back to read the next page from any gateway instance.

Every read answers JSON by default, or an Arrow IPC stream when the request's ``Accept`` asks for
``application/vnd.apache.arrow.stream`` (the non-row fields - next offsets, counts - then travel in the stream's
schema metadata under ``fluss.response``).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
from fastapi import APIRouter, Request, Response

import fluss
from fluss.errors import ErrorCode, FlussError
from fluss.gateway.clusters import CachedTable
from fluss.gateway.errors import LIMIT_EXCEEDED, GatewayError, from_fluss, invalid
from fluss.gateway.http import ARROW_STREAM, JSON, wants_arrow
from fluss.gateway.json_rows import RowsInvalid, decode_rows
from fluss.gateway.models import (
    LookupBody,
    LookupResponse,
    PrefixLookupBody,
    PrefixLookupResponse,
    ScanBody,
    ScanResponse,
    UnionReadBody,
    UnionReadResponse,
)
from fluss.gateway.render import arrow_stream, rows_to_json
from fluss.gateway.routes.catalog import bucket_offsets
from fluss.gateway.routes.common import (
    ERRORS,
    body_doc,
    body_model,
    clients,
    config,
    fluss_call,
    path_of,
    respond,
)
from fluss.record.change_type import ChangeType

router = APIRouter(prefix="/v1/clusters/{cluster}/databases/{database}/tables/{table}", responses=ERRORS)
_ARROW_RESPONSE = {200: {"content": {ARROW_STREAM: {}},
                         "description": "JSON, or an Arrow stream when Accept asks for one"}}
#: How long a scan waits for a bucket that has data below its end offset before answering with what it has.
SCAN_POLL_MS = 500


def _projection(info: fluss.TableInfo, columns: list[str] | None) -> list[str] | None:
    if columns is None:
        return None
    names = info.get_column_names()
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise invalid(f"column '{unknown[0]}' is not in '{info.table_path}' (columns: {', '.join(names)})")
    if not columns or len(set(columns)) != len(columns):
        raise invalid("columns must be a non-empty list of distinct column names")
    return list(columns)


def _keys_batch(info: fluss.TableInfo, keys: list[dict], columns: list[str], what: str) -> list[tuple]:
    """Key objects checked and converted like written rows (same JSON value rules), as value tuples."""
    try:
        batch = decode_rows(keys, info.row_schema, columns, set(columns))
    except RowsInvalid as e:
        raise RowsInvalid(e.errors) from None
    values = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
    return list(zip(*values, strict=True))


def _rows_response(request: Request, rows: list[dict | None], info: fluss.TableInfo, columns: list[str] | None,
                   extra: dict, json_doc) -> Response:
    """JSON via ``json_doc(rendered rows)``, or an Arrow stream of the non-null rows."""
    schema = info.row_schema.to_arrow()
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    present = [r for r in rows if r is not None]
    data = pa.Table.from_pylist([{c: r[c] for c in schema.names} for r in present], schema=schema)
    if wants_arrow(request):
        return Response(arrow_stream(data, schema, extra), media_type=ARROW_STREAM)
    rendered = iter(rows_to_json(data))
    return respond(json_doc([None if r is None else next(rendered) for r in rows]))


async def _pk_table(request: Request, cluster: str, database: str, table: str) -> tuple:
    cc = clients(request, cluster)
    entry = await fluss_call(cc.table(path_of(database, table)))
    if not entry.info.has_primary_key():
        raise invalid(f"'{entry.info.table_path}' is a log table: lookups need a primary-key table (use scan)")
    return cc, entry


@router.post("/lookup", response_model=LookupResponse, tags=["reads"], operation_id="lookup",
             openapi_extra=body_doc(LookupBody), responses=_ARROW_RESPONSE,
             summary="Rows by primary key (one or many keys): one result per key, null when absent.")
async def lookup(request: Request, cluster: str, database: str, table: str) -> Response:
    body = await body_model(request, LookupBody)
    if len(body.keys) > config(request).max_json_rows:
        raise GatewayError(LIMIT_EXCEEDED, f"{len(body.keys)} keys is above the limit of "
                           f"{config(request).max_json_rows}")
    cc, entry = await _pk_table(request, cluster, database, table)
    info = entry.info
    columns = _projection(info, body.columns)
    keys = _keys_batch(info, body.keys, info.get_primary_keys(), "key")
    lookuper = await cc.shared(entry, ("lookup",), lambda: entry.table.new_lookup().create_lookuper())
    try:
        rows = await asyncio.gather(*(lookuper.lookup(k) for k in keys))
    except FlussError as e:
        await cc.on_error(info.table_path, e)
        raise from_fluss(e) from None
    found = sum(r is not None for r in rows)
    return _rows_response(request, rows, info, columns, {"found": found},
                          lambda rendered: {"rows": rendered, "found": found})


@router.post("/prefix-lookup", response_model=PrefixLookupResponse, tags=["reads"], operation_id="prefixLookup",
             openapi_extra=body_doc(PrefixLookupBody), responses=_ARROW_RESPONSE,
             summary="Rows whose primary key starts with a bucket-key prefix (plus the partition keys of a "
                     "partitioned table), per prefix.")
async def prefix_lookup(request: Request, cluster: str, database: str, table: str) -> Response:
    body = await body_model(request, PrefixLookupBody)
    cfg = config(request)
    cc, entry = await _pk_table(request, cluster, database, table)
    info = entry.info
    columns = _projection(info, body.columns)
    lookup_columns = sorted(body.prefixes[0], key=info.get_column_names().index) \
        if all(isinstance(p, dict) for p in body.prefixes) and body.prefixes[0] else []
    if any(set(p) != set(lookup_columns) for p in body.prefixes):
        raise invalid("every prefix must name the same columns")
    unknown = [c for c in lookup_columns if c not in info.get_column_names()]
    if unknown or not lookup_columns:
        raise invalid(f"prefix column '{unknown[0] if unknown else ''}' is not in '{info.table_path}'")
    ordered = [c for c in info.get_primary_keys() if c in lookup_columns] + \
        [c for c in info.get_partition_keys() if c in lookup_columns and c not in info.get_primary_keys()]
    if set(ordered) != set(lookup_columns):
        raise invalid(f"prefix columns must be primary-key columns of '{info.table_path}'")
    prefixes = _keys_batch(info, body.prefixes, ordered, "prefix")

    def build():
        return entry.table.new_lookup().lookup_by(ordered).create_lookuper()

    try:
        lookuper = await cc.shared(entry, ("prefix", tuple(ordered)), build)
        results = await asyncio.gather(*(lookuper.lookup(p) for p in prefixes))
    except FlussError as e:
        await cc.on_error(info.table_path, e)
        raise from_fluss(e) from None
    limit = min(body.limit or cfg.max_read_rows, cfg.max_read_rows)
    kept: list[list[dict]] = []
    total = 0
    truncated = False
    for rows in results:
        room = max(0, limit - total)
        if len(rows) > room:
            truncated = True
        kept.append(rows[:room])
        total += len(kept[-1])
    flat = [r for rows in kept for r in rows]
    extra = {"row_count": total, "truncated": truncated, "counts": [len(rows) for rows in kept]}

    def doc(rendered):
        it = iter(rendered)
        return {"results": [[next(it) for _ in rows] for rows in kept], "row_count": total, "truncated": truncated}

    return _rows_response(request, flat, info, columns, extra, doc)


# ------------------------------------------------------------------------------------------------ scans

async def _scan_plan(cc, entry: CachedTable, body: ScanBody) -> tuple[dict, dict]:
    """Start and end offsets per (partition name, bucket) -> offsets."""
    info = entry.info
    admin = await cc.admin()
    if body.buckets is not None and (body.partitions is not None):
        raise invalid("give either buckets or partitions, not both")
    if body.start is not None and body.timestamp is not None:
        raise invalid("give either start or timestamp, not both")
    spec = fluss.OffsetSpec.timestamp(body.timestamp) if body.timestamp is not None else (
        fluss.OffsetSpec.latest() if body.start == "latest" else fluss.OffsetSpec.earliest())
    if body.buckets is not None:
        if not body.buckets:
            raise invalid("buckets must not be empty")
        wanted = {}
        counts = {}  # each partition's own bucket count
        if info.is_partitioned():
            counts = {p.partition_name: p.bucket_count
                      for p in await fluss_call(admin.list_partition_infos(info.table_path)) if p.bucket_count}
        for b in body.buckets:
            num_buckets = counts.get(b.partition) or info.num_buckets
            if b.bucket >= num_buckets:
                where = f"partition '{b.partition}' of " if b.partition is not None else ""
                raise invalid(f"bucket {b.bucket} does not exist ({where}'{info.table_path}' has {num_buckets})")
            if info.is_partitioned() != (b.partition is not None):
                raise invalid(f"'{info.table_path}' is {'' if info.is_partitioned() else 'not '}partitioned: "
                              f"{'give' if info.is_partitioned() else 'do not give'} a partition per bucket")
            key = (b.partition, b.bucket)
            if key in wanted:
                raise invalid(f"bucket {b.bucket} of partition {b.partition} is listed twice")
            wanted[key] = b.offset
        partitions = sorted({p for p, _ in wanted if p is not None})
    else:
        partitions = body.partitions if info.is_partitioned() else [None]
        if not info.is_partitioned() and body.partitions is not None:
            raise invalid(f"'{info.table_path}' is not partitioned")
        counts = {}  # each partition's own bucket count
        if info.is_partitioned():
            infos = await fluss_call(admin.list_partition_infos(info.table_path))
            counts = {p.partition_name: p.bucket_count for p in infos if p.bucket_count}
            if partitions is None:
                partitions = sorted(p.partition_name for p in infos)
        wanted = {(p, b): None for p in partitions for b in range(counts.get(p) or info.num_buckets)}
    ends: dict = {}
    starts: dict = {}
    for p in (partitions or [None]):
        for o in await bucket_offsets(admin, info, fluss.OffsetSpec.latest(), p):
            ends[(o["partition"], o["bucket"])] = o["offset"]
        if any(off is None for (pp, _), off in wanted.items() if pp == p):
            for o in await bucket_offsets(admin, info, spec, p):
                starts[(o["partition"], o["bucket"])] = o["offset"]
    start = {k: (off if off is not None else starts[k]) for k, off in wanted.items()}
    return start, {k: ends[k] for k in wanted}


@router.post("/scan", response_model=ScanResponse, tags=["reads"], operation_id="scan",
             openapi_extra=body_doc(ScanBody), responses=_ARROW_RESPONSE,
             summary="A bounded read of the log (the changelog of a primary-key table) from given offsets or a "
                     "timestamp: at most 'limit' records, and the next offset of every bucket.")
async def scan(request: Request, cluster: str, database: str, table: str) -> Response:
    body = await body_model(request, ScanBody)
    cfg = config(request)
    if body.limit > cfg.max_read_rows:
        raise GatewayError(LIMIT_EXCEEDED, f"limit {body.limit} is above the gateway's {cfg.max_read_rows}")
    cc = clients(request, cluster)
    entry = await fluss_call(cc.table(path_of(database, table)))
    info = entry.info
    columns = _projection(info, body.columns)
    start, ends = await _scan_plan(cc, entry, body)
    pids = {}
    if info.is_partitioned():
        admin = await cc.admin()
        pids = {p.partition_name: p.partition_id for p in await fluss_call(admin.list_partition_infos(info.table_path))}
        missing = sorted({p for p, _ in start if p not in pids})
        if missing:
            raise GatewayError("partition_not_found", f"partition '{missing[0]}' of '{info.table_path}' does not exist")
    for key, offset in start.items():
        if offset > ends[key]:
            raise GatewayError("offset_out_of_range", f"offset {offset} of bucket {key[1]}"
                               f"{'' if key[0] is None else f' of partition {key[0]}'} is beyond its end {ends[key]}")
    names = info.get_column_names()
    projection = tuple(names.index(c) for c in columns) if columns is not None else None
    by_pid = {v: k for k, v in pids.items()}

    async def read(scanner: fluss.LogScanner):
        return await _bounded_read(scanner, info, start, ends, pids, by_pid, body.limit)

    try:
        batches, position = await cc.with_scanner(entry, projection, read)
    except FlussError as e:
        await cc.on_error(info.table_path, e)
        raise from_fluss(e) from None
    schema = info.row_schema.to_arrow() if columns is None else pa.schema(
        [info.row_schema.to_arrow().field(c) for c in columns])
    next_offsets = [{"partition": p, "bucket": b, "offset": position[(p, b)]} for p, b in sorted(position, key=_order)]
    end_offsets = [{"partition": p, "bucket": b, "offset": ends[(p, b)]} for p, b in sorted(ends, key=_order)]
    complete = all(position[k] >= ends[k] for k in ends)
    count = sum(b.batch.num_rows for b, _ in batches)
    extra = {"row_count": count, "next_offsets": next_offsets, "end_offsets": end_offsets, "complete": complete}
    if wants_arrow(request):
        return Response(arrow_stream(_with_meta(batches, schema), _meta_schema(schema), extra),
                        media_type=ARROW_STREAM)
    records = []
    for b, partition in batches:
        rows = rows_to_json(b.batch)
        cts = b.change_types
        for i, row in enumerate(rows):
            records.append({"partition": partition, "bucket": b.bucket.bucket_id, "offset": b.base_offset + i,
                            "change_type": ChangeType(int(cts[i])).short_string(), "timestamp": b.timestamp,
                            "row": row})
    return respond({"records": records, **extra})


def _order(key: tuple) -> tuple:
    return ("" if key[0] is None else key[0], key[1])


def _meta_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field("_partition", pa.string()), pa.field("_bucket", pa.int32()),
                      pa.field("_offset", pa.int64()), pa.field("_change_type", pa.string()),
                      pa.field("_timestamp", pa.int64()), *schema])


def _with_meta(batches: list, schema: pa.Schema):
    meta = _meta_schema(schema)
    for b, partition in batches:
        n = b.batch.num_rows
        codes = np.asarray(b.change_types[:n], dtype=np.uint8)
        short = np.array([ChangeType(c).short_string() for c in range(5)], dtype=object)[codes]
        arrays = [pa.array([partition] * n, pa.string()), pa.array(np.full(n, b.bucket.bucket_id, np.int32)),
                  pa.array(np.arange(b.base_offset, b.base_offset + n, dtype=np.int64)),
                  pa.array(short, pa.string()), pa.array(np.full(n, b.timestamp, np.int64)), *b.batch.columns]
        yield pa.RecordBatch.from_arrays(arrays, schema=meta)


async def _bounded_read(scanner: fluss.LogScanner, info: fluss.TableInfo, start: dict, ends: dict, pids: dict,
                        by_pid: dict, limit: int) -> tuple[list, dict]:
    """Reads from ``start`` towards ``ends`` until ``limit`` records or every bucket is at its end; returns the
    batches (with partition names) and where each bucket stands."""
    position = dict(start)
    subscribed = set()
    for (p, b), offset in start.items():
        if offset < ends[(p, b)]:
            if p is None:
                scanner.subscribe(b, offset)
            else:
                scanner.subscribe_partition(pids[p], b, offset)
            subscribed.add((p, b))
    out: list = []
    remaining = limit
    idle_rounds = 0
    try:
        while subscribed and remaining > 0:
            batches = await scanner.poll_record_batch(SCAN_POLL_MS)
            if not batches:
                idle_rounds += 1
                if idle_rounds >= 2:  # below the end offsets but nothing arrives: answer with what there is
                    break
                continue
            idle_rounds = 0
            for rb in batches:
                p = None if rb.bucket.partition_id is None else by_pid.get(rb.bucket.partition_id)
                key = (p, rb.bucket.bucket_id)
                if key not in subscribed:
                    continue
                take = min(rb.batch.num_rows, ends[key] - rb.base_offset, remaining)
                if take > 0:
                    piece = rb if take == rb.batch.num_rows else fluss.RecordBatch(
                        rb.batch.slice(0, take), rb.bucket, rb.base_offset, rb.base_offset + take - 1,
                        rb.change_types[:take], rb.timestamp)
                    out.append((piece, p))
                    remaining -= take
                    position[key] = rb.base_offset + take
                if position[key] >= ends[key] or remaining <= 0:
                    _unsubscribe(scanner, pids, key)
                    subscribed.discard(key)
                if remaining <= 0:
                    break
    finally:
        for key in list(subscribed):
            _unsubscribe(scanner, pids, key)
    return out, position


def _unsubscribe(scanner: fluss.LogScanner, pids: dict, key: tuple) -> None:
    p, b = key
    if p is None:
        scanner.unsubscribe(b)
    else:
        scanner.unsubscribe_partition(pids[p], b)


# ------------------------------------------------------------------------------------------------ union read

@router.post("/union-read", response_model=UnionReadResponse, tags=["reads"], operation_id="unionRead",
             openapi_extra=body_doc(UnionReadBody), responses=_ARROW_RESPONSE,
             summary="A lake-enabled table as it is now: its lake snapshot plus the Fluss log after it "
                     "(primary-key tables merged by key), at most 'limit' rows.")
async def union_read_rows(request: Request, cluster: str, database: str, table: str) -> Response:
    from fluss.lake.config import is_lake_enabled
    from fluss.lake.union_read import latest_lake_snapshot_or_none, union_read

    body = await body_model(request, UnionReadBody)
    cfg = config(request)
    if body.limit > cfg.max_read_rows:
        raise GatewayError(LIMIT_EXCEEDED, f"limit {body.limit} is above the gateway's {cfg.max_read_rows}")
    cc = clients(request, cluster)
    entry = await fluss_call(cc.table(path_of(database, table)))
    info = entry.info
    if not is_lake_enabled(info):
        raise GatewayError("failed_precondition", f"'{info.table_path}' is not lake-enabled "
                           "(table.datalake.enabled): read it with scan")
    columns = _projection(info, body.columns)
    conn = await cc.connection()
    try:
        snapshot = await latest_lake_snapshot_or_none(conn, info.table_path)
        data = await union_read(conn, info.table_path, partitions=body.partitions)
    except FlussError as e:
        if e.error_code == ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION:
            raise invalid(e.message) from None
        raise from_fluss(e) from None
    truncated = data.num_rows > body.limit
    data = data.slice(0, body.limit)
    if columns is not None:
        data = data.select(columns)
    extra = {"row_count": data.num_rows, "truncated": truncated,
             "lake_snapshot_id": None if snapshot is None else snapshot.snapshot_id}
    if wants_arrow(request):
        return Response(arrow_stream(data, data.schema, extra), media_type=ARROW_STREAM)
    return respond({"rows": rows_to_json(data), **extra})


__all__ = ["router", "JSON"]
