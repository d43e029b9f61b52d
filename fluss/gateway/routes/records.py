"""``POST .../tables/{table}/records``: schema-aware writes as JSON (FIP-49 entries) or an Arrow IPC stream.

The whole body is checked against the table schema first; any problem is a 400 naming the row index, column
and reason, and nothing is written. Then the rows are written and the answer waits for their
acknowledgement (``writer.acks``: ``all`` by default - every in-sync replica has them). With an
``Idempotency-Key`` header the write is exactly-once across retries and gateway instances
(``fluss.gateway.exactly_once``); without one, a retry after an unknown outcome may write twice.
"""

from __future__ import annotations

import asyncio

import orjson
import pyarrow as pa
from fastapi import APIRouter, Query, Request

from fluss.gateway.errors import LIMIT_EXCEEDED, UNSUPPORTED_MEDIA_TYPE, GatewayError, from_fluss, invalid
from fluss.gateway.exactly_once import Ledger, body_digest, check_key, write_once
from fluss.gateway.http import ARROW_STREAM, JSON, media_type, read_body
from fluss.gateway.models import WriteBody, WriteResponse
from fluss.gateway.render import read_arrow_stream
from fluss.gateway.routes.common import ERRORS, body_doc, clients, config, fluss_call, path_of, respond
from fluss.gateway.write_plan import WritePlan, plan_arrow, plan_json
from fluss.gateway.writes import response_of, write

router = APIRouter(prefix="/v1/clusters/{cluster}", responses=ERRORS)

IDEMPOTENCY_HEADER = "idempotency-key"


def _acks(request: Request) -> str:
    opts = config(request).client_options
    acks = str(opts.get("writer.acks", opts.get("client.writer.acks", "all"))).lower()
    return "all" if acks in ("all", "-1") else acks


@router.post("/databases/{database}/tables/{table}/records", response_model=WriteResponse, tags=["records"],
             operation_id="writeRecords",
             openapi_extra={**body_doc(WriteBody, (JSON, ARROW_STREAM)),
                            "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False,
                                            "schema": {"type": "string", "maxLength": 256},
                                            "description": "Makes the write exactly-once: a retry with the same "
                                                           "key and body (on any gateway) writes nothing again "
                                                           "and answers the first outcome."}]},
             responses={200: {"content": {ARROW_STREAM: {}}, "description": "Acknowledged outcomes (Arrow bodies "
                                                                            "answer ArrowWriteResponse)"},
                        409: {"description": "The Idempotency-Key was used for a different body"},
                        415: {"description": "Neither JSON nor an Arrow stream"}},
             summary="Writes rows: append (log tables), upsert / partial update / delete (primary-key tables); "
                     "answers once they are acknowledged.")
async def write_records(request: Request, cluster: str, database: str, table: str,
                        operation: str | None = Query(None, description="Arrow bodies: append, upsert or delete "
                                                                        "(default append / upsert by table kind)."),
                        partial_update_columns: str | None = Query(
                            None, description="Arrow bodies: comma-separated columns of a partial update.")) -> object:
    cfg = config(request)
    kind = media_type(request)
    if kind not in (JSON, ARROW_STREAM, ""):
        raise GatewayError(UNSUPPORTED_MEDIA_TYPE, f"write bodies are {JSON} or {ARROW_STREAM}, got '{kind}'")
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is not None:
        check_key(key)
    body = await read_body(request, cfg.max_body_bytes)
    if not body:
        raise invalid("the request body is empty")
    cc = clients(request, cluster)
    path = path_of(database, table)
    entry = await fluss_call(cc.table(path))
    plan = await asyncio.to_thread(_plan, entry.info, kind, body, operation, partial_update_columns,
                                   cfg.max_json_rows)
    acks = _acks(request)
    if kind == ARROW_STREAM:
        def build():
            return {"row_count": plan.num_rows, "operation": plan.operations[0], "acks": acks}
    else:
        def build():
            return response_of(plan, [None] * plan.num_rows, acks)
    if key is None:
        outcomes = await write(cc, entry, plan)
        doc = response_of(plan, outcomes, acks) if kind != ARROW_STREAM else build()
        if kind == ARROW_STREAM and any(o is not None for o in outcomes):
            raise from_fluss(next(o for o in outcomes if o is not None))
        return respond(doc)
    ledger = _ledger(request, cluster)
    digest = body_digest(str(path), kind or JSON, operation or "", partial_update_columns or "", body)
    doc, replayed = await write_once(cc, ledger, entry, plan, key, digest, build)
    return respond({**doc, "idempotency_key": key, "replayed": replayed})


def _ledger(request: Request, cluster: str) -> Ledger:
    ledgers = request.app.state.ledgers
    ledger = ledgers.get(cluster)
    if ledger is None:
        ledger = ledgers.setdefault(cluster, Ledger(clients(request, cluster), config(request).ledger_database))
    return ledger


def _plan(info, kind: str, body: bytes, operation: str | None, targets: str | None, max_rows: int) -> WritePlan:
    if kind == ARROW_STREAM:
        try:
            data = read_arrow_stream(body)
        except (pa.ArrowInvalid, OSError) as e:
            raise invalid(f"the body is not an Arrow IPC stream: {e}") from None
        columns = [c.strip() for c in targets.split(",")] if targets else None
        return plan_arrow(info, data, operation, columns)
    if operation is not None or targets is not None:
        raise invalid("operation and partial_update_columns query parameters are for Arrow bodies; a JSON body "
                      "names the operation per entry and partial_update_columns in the body")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise invalid(f"the request body is not valid JSON: {e}") from None
    entries = document.get("entries") if isinstance(document, dict) else None
    if isinstance(entries, list) and len(entries) > max_rows:
        raise GatewayError(LIMIT_EXCEEDED, f"the request has {len(entries)} entries, more than the limit of "
                           f"{max_rows}: split it")
    return plan_json(info, document)

