"""Running a write plan through the client's writers (the path of writes without an ``Idempotency-Key``).

One writer per (table, shape) is shared by all requests: an ``AppendWriter`` for a log table, an ``UpsertWriter``
(full rows, or one per set of partial-update columns) for a primary-key table. A request hands its rows over as
Arrow (``write_arrow_batch`` / ``upsert_arrow_batch`` / ``delete_arrow_batch``, runs of one operation in
request order, so the writer keeps their order per bucket) and waits for the handles: the answer is sent only
once every row is acknowledged as ``writer.acks`` says (``all``: in every in-sync replica; ``1``: on the
leader). Rows of one run share a verdict.

Retrying such a request after an unknown outcome (a timeout, a gateway that died) may write its rows twice: a
caller that retries should send an ``Idempotency-Key`` (``fluss.gateway.exactly_once``).
"""

from __future__ import annotations

import asyncio

from fluss.errors import ErrorCode, FlussError
from fluss.gateway.clusters import CachedTable, ClusterClients
from fluss.gateway.errors import FLUSS_ERROR_MAP, from_fluss
from fluss.gateway.write_plan import APPEND, DELETE, WritePlan


async def writer_for(clients: ClusterClients, entry: CachedTable, plan: WritePlan):
    if not entry.info.has_primary_key():
        return await clients.shared(entry, ("append",), lambda: entry.table.new_append().create_writer())
    targets = tuple(plan.targets) if plan.targets is not None else None

    def build():
        upsert = entry.table.new_upsert()
        if targets is not None:
            upsert = upsert.partial_update_by_name(list(targets))
        return upsert.create_writer()

    return await clients.shared(entry, ("upsert", targets), build)


def _submit(writer, plan: WritePlan) -> list[tuple[int, int, object]]:
    """Hands every run to the writer, in order (runs on a worker thread: encoding is CPU work)."""
    handles = []
    pk = plan.info.get_primary_keys()
    written = plan.targets
    for op, start, end in plan.runs():
        rows = plan.batch.slice(start, end - start)
        if op == APPEND:
            handle = writer.write_arrow_batch(rows)
        elif op == DELETE:
            handle = writer.delete_arrow_batch(rows.select(pk))
        else:
            handle = writer.upsert_arrow_batch(rows if written is None else rows.select(written))
        handles.append((start, end, handle))
    return handles


async def write(clients: ClusterClients, entry: CachedTable, plan: WritePlan) -> list[FlussError | None]:
    """Writes the plan and waits for its acknowledgement; the outcome of every row (None: written)."""
    writer = await writer_for(clients, entry, plan)
    try:
        handles = await asyncio.to_thread(_submit, writer, plan)
    except FlussError as e:
        await clients.on_error(entry.info.table_path, e)
        raise from_fluss(e) from None
    outcomes: list[FlussError | None] = [None] * plan.num_rows
    results = await asyncio.gather(*(h.wait() for _, _, h in handles), return_exceptions=True)
    for (start, end, _), result in zip(handles, results, strict=True):
        if isinstance(result, BaseException):
            err = result if isinstance(result, FlussError) else FlussError(str(result), ErrorCode.UNKNOWN_SERVER_ERROR)
            await clients.on_error(entry.info.table_path, err)
            for i in range(start, end):
                outcomes[i] = err
    return outcomes


def response_of(plan: WritePlan, outcomes: list[FlussError | None], acks: str) -> dict:
    """The FIP-49 write response: ordered successes and failures of the entries."""
    ids = plan.ids or [str(i) for i in range(plan.num_rows)]
    successes = [{"id": ids[i]} for i, o in enumerate(outcomes) if o is None]
    failures = [{"id": ids[i], "error_code": FLUSS_ERROR_MAP.get(o.error_code, "backend"), "message": str(o)}
                for i, o in enumerate(outcomes) if o is not None]
    return {"row_count": plan.num_rows, "success_count": len(successes), "error_count": len(failures),
            "successes": successes, "failures": failures, "acks": acks}
