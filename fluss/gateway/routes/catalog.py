"""Metadata and DDL: databases, tables, partitions (FIP-49 paths), plus offsets, row counts and lake snapshots.

Lists are sorted by name and paged by keyset (``max_results``, ``page_token`` -> ``next_page_token``). A create
answers 201 with a ``Location`` header; a drop and an alter (``PATCH`` of a table) answer 204. Every DDL through this gateway drops the table's
cached metadata, so the next request sees the change.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response

import fluss
from fluss.errors import ErrorCode, FlussError
from fluss.gateway.errors import DATABASE_NOT_EMPTY, GatewayError, from_fluss, invalid
from fluss.gateway.models import (
    AddColumnChange,
    AlterTableBody,
    CreateDatabaseBody,
    CreatePartitionBody,
    CreateTableBody,
    DatabaseResponse,
    DatabasesResponse,
    LakeSnapshotResponse,
    OffsetsResponse,
    PartitionResponse,
    PartitionsResponse,
    SetConfigChange,
    StatsResponse,
    TableResponse,
    TablesResponse,
    ValidateOnlyResponse,
)
from fluss.gateway.routes.common import (
    ERRORS,
    body_doc,
    body_model,
    clients,
    fluss_call,
    page,
    path_of,
    respond,
)
from fluss.gateway.schema_json import descriptor_from_json, table_to_json, type_from_json
from fluss.key.partition import name_to_spec, partition_spec_to_name
from fluss.types import parse_type

router = APIRouter(prefix="/v1/clusters/{cluster}", responses=ERRORS)

_MAX_RESULTS = Query(None, description="Maximum entries to return (default 100, at most 1000).")
_PAGE_TOKEN = Query(None, description="Opaque token from the previous response's next_page_token.")


# ----------------------------------------------------------------------------------------------- databases

@router.get("/databases", response_model=DatabasesResponse, tags=["metadata"], operation_id="listDatabases",
            summary="Lists the databases of a cluster, in lexical order.")
async def list_databases(request: Request, cluster: str, max_results: int | None = _MAX_RESULTS,
                         page_token: str | None = _PAGE_TOKEN) -> object:
    admin = await clients(request, cluster).admin()
    names, token = page(await fluss_call(admin.list_databases()), max_results, page_token)
    return respond({"databases": names, **({"next_page_token": token} if token else {})})


@router.post("/databases", status_code=201, response_model=DatabaseResponse, tags=["ddl"],
             operation_id="createDatabase", summary="Creates a database.", openapi_extra=body_doc(CreateDatabaseBody))
async def create_database(request: Request, cluster: str) -> object:
    body = await body_model(request, CreateDatabaseBody)
    admin = await clients(request, cluster).admin()
    await fluss_call(admin.create_database(body.database, fluss.DatabaseDescriptor(body.comment,
                                                                                   body.custom_properties)))
    return respond({"database": body.database, "comment": body.comment,
                    "custom_properties": body.custom_properties or {}}, 201,
                   {"Location": f"/v1/clusters/{cluster}/databases/{quote(body.database, safe='')}"})


@router.get("/databases/{database}", response_model=DatabaseResponse, tags=["metadata"],
            operation_id="describeDatabase", summary="Describes a database.")
async def describe_database(request: Request, cluster: str, database: str) -> object:
    admin = await clients(request, cluster).admin()
    info = await fluss_call(admin.get_database_info(database))
    desc = info.get_database_descriptor()
    return respond({"database": database, "comment": desc.comment,
                    "custom_properties": desc.get_custom_properties(),
                    "created_time": getattr(info, "created_time", None),
                    "modified_time": getattr(info, "modified_time", None)})


@router.delete("/databases/{database}", status_code=204, tags=["ddl"], operation_id="dropDatabase",
               summary="Drops a database; one that still holds tables only with cascade=true (else 409).")
async def drop_database(request: Request, cluster: str, database: str,
                        cascade: bool = Query(False, description="Drop the database's tables too.")) -> Response:
    cc = clients(request, cluster)
    admin = await cc.admin()
    if not cascade:
        tables = await fluss_call(admin.list_tables(database))
        if tables:
            raise GatewayError(DATABASE_NOT_EMPTY, f"database '{database}' still holds {len(tables)} table(s) "
                               f"({', '.join(sorted(tables)[:5])}...); drop them first or pass cascade=true")
    else:
        for name in await fluss_call(admin.list_tables(database)):
            await cc.forget(path_of(database, name))
    await fluss_call(admin.drop_database(database, ignore_if_not_exists=False, cascade=cascade))
    return Response(status_code=204)


# ----------------------------------------------------------------------------------------------- tables

@router.get("/databases/{database}/tables", response_model=TablesResponse, tags=["metadata"],
            operation_id="listTables", summary="Lists the tables of a database, in lexical order.")
async def list_tables(request: Request, cluster: str, database: str, max_results: int | None = _MAX_RESULTS,
                      page_token: str | None = _PAGE_TOKEN) -> object:
    admin = await clients(request, cluster).admin()
    names, token = page(await fluss_call(admin.list_tables(database)), max_results, page_token)
    return respond({"tables": names, **({"next_page_token": token} if token else {})})


@router.post("/databases/{database}/tables", status_code=201, response_model=TableResponse, tags=["ddl"],
             operation_id="createTable", openapi_extra=body_doc(CreateTableBody),
             responses={200: {"model": ValidateOnlyResponse, "description": "validate_only: nothing created"}},
             summary="Creates a table (201, Location, the new table's description) or, with validate_only, "
                     "checks its definition.")
async def create_table(request: Request, cluster: str, database: str) -> object:
    body = await body_model(request, CreateTableBody)
    descriptor = descriptor_from_json(body)
    path = path_of(database, body.table_name)
    if body.validate_only:
        return respond({"validate_only": True, "database": database, "table": body.table_name,
                        "column_count": len(body.columns), "primary_key": list(body.primary_key or [])})
    cc = clients(request, cluster)
    admin = await cc.admin()
    await fluss_call(admin.create_table(path, descriptor, ignore_if_exists=False))
    await cc.forget(path)
    info = await fluss_call(admin.get_table_info(path))
    return respond(table_to_json(info), 201, {"Location": _table_url(cluster, database, body.table_name)})


def _table_url(cluster: str, database: str, table: str) -> str:
    return f"/v1/clusters/{cluster}/databases/{quote(database, safe='')}/tables/{quote(table, safe='')}"


@router.get("/databases/{database}/tables/{table}", response_model=TableResponse, tags=["metadata"],
            operation_id="describeTable",
            summary="Describes a table: schema (types as Fluss prints them), keys, distribution, partitioning, "
                    "properties.")
async def describe_table(request: Request, cluster: str, database: str, table: str) -> object:
    admin = await clients(request, cluster).admin()
    return respond(table_to_json(await fluss_call(admin.get_table_info(path_of(database, table)))))


@router.delete("/databases/{database}/tables/{table}", status_code=204, tags=["ddl"], operation_id="dropTable",
               summary="Drops a table.")
async def drop_table(request: Request, cluster: str, database: str, table: str) -> Response:
    cc = clients(request, cluster)
    path = path_of(database, table)
    await fluss_call((await cc.admin()).drop_table(path, ignore_if_not_exists=False))
    await cc.forget(path)
    return Response(status_code=204)


@router.patch("/databases/{database}/tables/{table}", status_code=204, tags=["ddl"], operation_id="alterTable",
              openapi_extra=body_doc(AlterTableBody),
              summary="Alters a table: add_column (nullable, appended), set_config / reset_config of alterable "
                      "options and custom properties; 204, GET the table to see it.")
async def alter_table(request: Request, cluster: str, database: str, table: str) -> Response:
    body = await body_model(request, AlterTableBody)
    changes = [_table_change(c) for c in body.changes]
    cc = clients(request, cluster)
    path = path_of(database, table)
    await fluss_call((await cc.admin()).alter_table(path, changes, ignore_if_not_exists=False))
    await cc.forget(path)
    return Response(status_code=204)


def _table_change(change: object) -> fluss.TableChange:
    """The admin's change of one body change; a bad column type is 400 naming the column."""
    if isinstance(change, AddColumnChange):
        if isinstance(change.data_type, str):  # as written: a NOT NULL in it is refused by the coordinator
            try:
                data_type = parse_type(change.data_type)
            except FlussError as e:
                raise invalid(f"column '{change.name}': {e.message}") from None
        else:
            data_type = type_from_json(change.data_type, True, change.name)
        return fluss.TableChange.add_column(change.name, str(data_type), change.comment)
    if isinstance(change, SetConfigChange):
        return fluss.TableChange.set(change.key, change.value)
    return fluss.TableChange.reset(change.key)


# ----------------------------------------------------------------------------------------------- partitions

async def _partitioned_info(request: Request, cluster: str, database: str, table: str) -> fluss.TableInfo:
    info = await fluss_call((await clients(request, cluster).admin()).get_table_info(path_of(database, table)))
    if not info.is_partitioned():
        raise invalid(f"table '{database}.{table}' is not partitioned")
    return info


@router.get("/databases/{database}/tables/{table}/partitions", response_model=PartitionsResponse,
            tags=["metadata"], operation_id="listPartitions",
            summary="Lists the partitions of a partitioned table, by name.")
async def list_partitions(request: Request, cluster: str, database: str, table: str,
                          max_results: int | None = _MAX_RESULTS, page_token: str | None = _PAGE_TOKEN) -> object:
    await _partitioned_info(request, cluster, database, table)
    admin = await clients(request, cluster).admin()
    infos = {p.partition_name: p for p in await fluss_call(admin.list_partition_infos(path_of(database, table)))}
    names, token = page(list(infos), max_results, page_token)
    entries = [{"name": n, "partition": infos[n].partition_spec, "partition_id": infos[n].partition_id}
               for n in names]
    return respond({"partitions": entries, **({"next_page_token": token} if token else {})})


@router.post("/databases/{database}/tables/{table}/partitions", status_code=201, response_model=PartitionResponse,
             tags=["ddl"], operation_id="createPartition", openapi_extra=body_doc(CreatePartitionBody),
             summary="Creates a partition from its spec (every partition key, by name).")
async def create_partition(request: Request, cluster: str, database: str, table: str) -> object:
    body = await body_model(request, CreatePartitionBody)
    info = await _partitioned_info(request, cluster, database, table)
    keys = info.get_partition_keys()
    if set(body.partition) != set(keys):
        raise invalid(f"a partition spec of '{database}.{table}' names exactly its partition keys "
                      f"({', '.join(keys)}), got {', '.join(body.partition) or 'none'}")
    try:
        name = partition_spec_to_name(body.partition, keys)
    except FlussError as e:
        raise from_fluss(e) from None
    cc = clients(request, cluster)
    await fluss_call((await cc.admin()).create_partition(info.table_path, body.partition, ignore_if_exists=False))
    return respond({"database": database, "table": table, "partition": body.partition, "name": name}, 201,
                   {"Location": f"{_table_url(cluster, database, table)}/partitions/{quote(name, safe='')}"})


@router.delete("/databases/{database}/tables/{table}/partitions/{partition}", status_code=204, tags=["ddl"],
               operation_id="dropPartition",
               summary="Drops a partition by its Fluss name (values in partition-key order joined by '$').")
async def drop_partition(request: Request, cluster: str, database: str, table: str, partition: str) -> Response:
    info = await _partitioned_info(request, cluster, database, table)
    try:
        spec = name_to_spec(partition, info.get_partition_keys())
    except FlussError as e:
        raise from_fluss(e) from None
    cc = clients(request, cluster)
    await fluss_call((await cc.admin()).drop_partition(info.table_path, spec, ignore_if_not_exists=False))
    await cc.forget(info.table_path)
    return Response(status_code=204)


# ----------------------------------------------------------------------------------------------- state

@router.get("/databases/{database}/tables/{table}/offsets", response_model=OffsetsResponse, tags=["metadata"],
            operation_id="listOffsets",
            summary="Per bucket: the earliest offset, the latest (high watermark), or the first offset at or "
                    "after a timestamp.")
async def list_offsets(request: Request, cluster: str, database: str, table: str,
                       spec: str = Query("latest", pattern="^(earliest|latest|timestamp)$"),
                       timestamp: int | None = Query(None, ge=0, description="Epoch ms, for spec=timestamp."),
                       partition: str | None = Query(None, description="Partition name (partitioned tables; "
                                                                       "default: every partition).")) -> object:
    if (spec == "timestamp") != (timestamp is not None):
        raise invalid("give timestamp exactly when spec=timestamp")
    offset_spec = {"earliest": fluss.OffsetSpec.earliest(), "latest": fluss.OffsetSpec.latest()}.get(spec) or \
        fluss.OffsetSpec.timestamp(timestamp)
    admin = await clients(request, cluster).admin()
    path = path_of(database, table)
    info = await fluss_call(admin.get_table_info(path))
    return respond({"spec": spec, "offsets": await bucket_offsets(admin, info, offset_spec, partition)})


async def bucket_offsets(admin: fluss.FlussAdmin, info: fluss.TableInfo, spec: fluss.OffsetSpec,
                         partition: str | None = None) -> list[dict]:
    """``[{"partition", "bucket", "offset"}]`` for every bucket (of ``partition``, or of every partition)."""
    buckets = list(range(info.num_buckets))
    if not info.is_partitioned():
        if partition is not None:
            raise invalid(f"table '{info.table_path}' is not partitioned")
        offsets = await fluss_call(admin.list_offsets(info.table_path, buckets, spec))
        return [{"partition": None, "bucket": b, "offset": offsets[b]} for b in buckets]
    infos = {p.partition_name: p for p in await fluss_call(admin.list_partition_infos(info.table_path))}
    names = [partition] if partition is not None else sorted(infos)
    out = []
    for name in names:
        own = infos[name].bucket_count if name in infos else None  # a partition keeps its own bucket count
        part_buckets = list(range(own)) if own else buckets
        offsets = await fluss_call(admin.list_partition_offsets(info.table_path, name, part_buckets, spec))
        out.extend({"partition": name, "bucket": b, "offset": offsets[b]} for b in part_buckets)
    return out


@router.get("/databases/{database}/tables/{table}/stats", response_model=StatsResponse, tags=["metadata"],
            operation_id="getTableStats", summary="The table's current row count.")
async def table_stats(request: Request, cluster: str, database: str, table: str) -> object:
    admin = await clients(request, cluster).admin()
    stats = await fluss_call(admin.get_table_stats(path_of(database, table)))
    return respond({"row_count": stats.row_count})


@router.get("/databases/{database}/tables/{table}/lake-snapshot", response_model=LakeSnapshotResponse,
            tags=["metadata"], operation_id="getLakeSnapshot",
            summary="The latest lake snapshot of a lake-enabled table (404 not_found before the first tiering).")
async def lake_snapshot(request: Request, cluster: str, database: str, table: str) -> object:
    admin = await clients(request, cluster).admin()
    try:
        snapshot = await admin.get_latest_lake_snapshot(path_of(database, table))
    except FlussError as e:
        if e.error_code == ErrorCode.LAKE_SNAPSHOT_NOT_EXIST:
            raise GatewayError("not_found", f"table '{database}.{table}' has no lake snapshot yet: {e.message}") \
                from None
        raise from_fluss(e) from None
    offsets = [{"partition": snapshot.partition_names.get(tb.partition_id) if tb.partition_id is not None else None,
                "bucket": tb.bucket_id, "offset": off} for tb, off in sorted(snapshot.table_buckets_offset.items())]
    return respond({"snapshot_id": snapshot.snapshot_id, "commit_time": snapshot.commit_time, "offsets": offsets})
