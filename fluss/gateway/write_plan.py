"""A write request, checked and turned into Arrow before anything is sent (no I/O here).

A :class:`WritePlan` is the whole request in the table's Arrow schema, in request order: for a log table the
rows to append; for a primary-key table every row with its change type (``+U`` upsert, ``-D`` delete; a delete
row holds the key, other columns null) and, for a partial update, the target columns (the other columns of an
upsert row are null and not written). Any problem - a wrong type, a missing key, an unknown column, an
operation the table does not take - raises before a plan exists, so a malformed body never reaches the cluster.

JSON bodies follow FIP-49's write body (``{"entries": [{"id", "append"|"upsert"|"delete": {row}}],
"partial_update_columns"}``); Arrow bodies are an IPC stream of rows plus ``operation`` (append, upsert,
delete) and ``partial_update_columns`` from the query string.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

import fluss
from fluss.errors import FlussError
from fluss.gateway.errors import invalid
from fluss.gateway.json_rows import RowsInvalid, decode_rows
from fluss.record.change_type import ChangeType
from fluss.row_convert import conform_batch
from fluss.types import RowSchema

APPEND, UPSERT, DELETE = "append", "upsert", "delete"
_CHANGE = {UPSERT: ChangeType.UpdateAfter, DELETE: ChangeType.Delete}


@dataclass
class WritePlan:
    info: fluss.TableInfo
    batch: pa.RecordBatch                 # every row, the table's Arrow schema, request order
    operations: list[str]                 # per row: append / upsert / delete
    targets: list[str] | None = None      # partial update: the written columns (primary key included)
    ids: list[str] | None = None          # JSON entries' ids (Arrow writes have none)

    @property
    def num_rows(self) -> int:
        return self.batch.num_rows

    @property
    def change_types(self) -> np.ndarray | None:
        """Per row change type for a primary-key table (None: an append-only batch)."""
        if not self.info.has_primary_key():
            return None
        return np.fromiter((_CHANGE[op] for op in self.operations), dtype=np.uint8, count=len(self.operations))

    def runs(self) -> list[tuple[str, int, int]]:
        """Consecutive rows of one operation: ``(operation, start, end)``, in request order."""
        out: list[tuple[str, int, int]] = []
        start = 0
        for i in range(1, len(self.operations) + 1):
            if i == len(self.operations) or self.operations[i] != self.operations[start]:
                out.append((self.operations[start], start, i))
                start = i
        return out

    def target_indices(self) -> list[int] | None:
        if self.targets is None:
            return None
        names = self.info.get_column_names()
        return [names.index(c) for c in self.targets]


def check_targets(info: fluss.TableInfo, targets: list[str] | None) -> list[str] | None:
    """Partial-update columns: a primary-key table, known distinct columns, the whole primary key included,
    and every column left out nullable (it keeps its value, or is null in a new row)."""
    if targets is None:
        return None
    if not info.has_primary_key():
        raise invalid(f"partial_update_columns needs a primary-key table; '{info.table_path}' is a log table")
    schema = info.row_schema
    names = schema.column_names
    unknown = [c for c in targets if c not in names]
    if unknown:
        raise invalid(f"partial-update column '{unknown[0]}' is not in the table (columns: {', '.join(names)})")
    if len(set(targets)) != len(targets):
        raise invalid("partial_update_columns lists a column twice")
    missing_key = [k for k in info.get_primary_keys() if k not in targets]
    if missing_key:
        raise invalid(f"partial_update_columns must include primary-key column '{missing_key[0]}'")
    not_null = [c.name for c in schema.columns if c.name not in targets and not c.data_type.nullable]
    if not_null:
        raise invalid(f"a partial update must write every NOT NULL column, but '{not_null[0]}' is left out")
    return [c for c in names if c in targets]  # table order


def _widen(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` (some of the table's columns) with the other columns null, in the table's Arrow schema."""
    arrays = [batch.column(f.name) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
              for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def plan_json(info: fluss.TableInfo, body: object) -> WritePlan:
    """The plan of a FIP-49 JSON write body (raises GatewayError / RowsInvalid naming what is wrong)."""
    if not isinstance(body, dict):
        raise invalid("the write body must be a JSON object with 'entries'")
    unknown = set(body) - {"entries", "partial_update_columns"}
    if unknown:
        raise invalid(f"unknown field '{sorted(unknown)[0]}' in the write body (fields: entries, "
                      "partial_update_columns)")
    entries = body.get("entries")
    if not isinstance(entries, list) or not entries:
        raise invalid("'entries' must be a non-empty array of {\"append\"|\"upsert\"|\"delete\": {row}} objects")
    targets_raw = body.get("partial_update_columns")
    if targets_raw is not None and (not isinstance(targets_raw, list) or not targets_raw
                                    or not all(isinstance(c, str) for c in targets_raw)):
        raise invalid("'partial_update_columns' must be a non-empty array of column names")
    targets = check_targets(info, targets_raw)
    schema = info.row_schema
    pk = info.get_primary_keys()
    allowed = (UPSERT, DELETE) if pk else (APPEND,)
    ops: list[str] = []
    rows: list[object] = []
    ids: list[str] = []
    for i, entry in enumerate(entries):
        # the common entries, {"append": {...}} and {"id": "...", "upsert": {...}}, take the fast lane
        if type(entry) is dict and len(entry) == 1:
            entry_id, (op, row) = None, next(iter(entry.items()))
        elif type(entry) is dict and len(entry) == 2 and type(entry.get("id")) is str:
            entry_id = entry["id"]
            op, row = next((k, v) for k, v in entry.items() if k != "id")
        else:
            op = entry_id = row = None
        if op not in allowed:
            _entry_error(info, entry, i)
        ids.append(str(i) if entry_id is None else entry_id)
        ops.append(op)
        rows.append(row)
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for i, entry_id in enumerate(ids):
            if entry_id in seen:
                raise invalid(f"entries[{i}].id '{entry_id}' is used twice in the request")
            seen.add(entry_id)
    arrow_schema = schema.to_arrow()
    parts: list[tuple[list[int], pa.RecordBatch]] = []
    errors = []
    by_op: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        by_op.setdefault(op, []).append(i)
    for op, indices in by_op.items():
        if op == DELETE:
            columns, required, ignored = pk, set(pk), [c for c in schema.column_names if c not in pk]
        else:
            columns = targets or schema.column_names
            required = {c.name for c in schema.columns if c.name in columns and not c.data_type.nullable}
            ignored = []
        try:
            decoded = decode_rows([rows[i] for i in indices], schema, columns, required, indices, ignored)
            parts.append((indices, _widen(decoded, arrow_schema)))
        except RowsInvalid as e:
            errors.extend(e.errors)
    if errors:
        raise RowsInvalid(errors)
    batch = _in_request_order(parts, arrow_schema, len(ops))
    return WritePlan(info, batch, ops, targets, ids)


def _entry_error(info: fluss.TableInfo, entry: object, i: int) -> None:
    """Raises the error of a malformed entry (the slow path: it names what is wrong)."""
    if not isinstance(entry, dict):
        raise invalid(f"entries[{i}] must be an object with one of append, upsert, delete")
    kinds = [k for k in (APPEND, UPSERT, DELETE) if k in entry]
    extra = set(entry) - {APPEND, UPSERT, DELETE, "id"}
    if extra:
        raise invalid(f"entries[{i}] has unknown field '{sorted(extra)[0]}'")
    if len(kinds) != 1:
        raise invalid(f"entries[{i}] must have exactly one of append, upsert, delete (got {', '.join(kinds) or 'none'})")
    if "id" in entry and not isinstance(entry["id"], str):
        raise invalid(f"entries[{i}].id must be a string")
    if info.has_primary_key():
        raise invalid(f"entries[{i}] is an append, but '{info.table_path}' is a primary-key table: use upsert "
                      "or delete")
    raise invalid(f"entries[{i}] is an {kinds[0]}, but '{info.table_path}' is a log table: use append")


def _in_request_order(parts: list[tuple[list[int], pa.RecordBatch]], schema: pa.Schema, n: int) -> pa.RecordBatch:
    if len(parts) == 1:
        return parts[0][1]
    order = np.empty(n, dtype=np.int64)
    position = 0
    for indices, part in parts:
        order[np.asarray(indices, dtype=np.int64)] = np.arange(position, position + part.num_rows)
        position += part.num_rows
    table = pa.Table.from_batches([p for _, p in parts], schema=schema).take(pa.array(order))
    return table.combine_chunks().to_batches()[0]


def plan_arrow(info: fluss.TableInfo, data: pa.Table, operation: str | None,
               targets_raw: list[str] | None) -> WritePlan:
    """The plan of an Arrow stream body: every row gets ``operation`` (default: append for a log table, upsert
    for a primary-key table); columns are matched by name and converted only without loss."""
    pk = info.get_primary_keys()
    op = operation or (UPSERT if pk else APPEND)
    if op not in (APPEND, UPSERT, DELETE):
        raise invalid(f"operation must be append, upsert or delete, got '{op}'")
    if pk and op == APPEND:
        raise invalid(f"'{info.table_path}' is a primary-key table: use operation=upsert or delete")
    if not pk and op != APPEND:
        raise invalid(f"'{info.table_path}' is a log table: only operation=append")
    if op == DELETE and targets_raw:
        raise invalid("partial_update_columns applies to upserts, not deletes")
    targets = check_targets(info, targets_raw)
    schema = info.row_schema
    if op == DELETE:
        columns = pk
    elif targets is not None:
        columns = targets
    else:
        columns = schema.column_names
    missing = [c for c in columns if c not in data.schema.names]
    if missing:
        raise invalid(f"the Arrow data lacks column '{missing[0]}' (this {op} writes: {', '.join(columns)})")
    extra = [c for c in data.schema.names if c not in columns and (op != DELETE or c not in schema.column_names)]
    if extra:
        raise invalid(f"the Arrow data has column '{extra[0]}', which this {op} does not write "
                      f"({', '.join(columns)})")
    part = RowSchema([schema.column(c) for c in columns], [k for k in pk if k in columns])
    try:
        conformed = conform_batch(data.select(columns), part)
    except FlussError as e:
        raise invalid(f"the Arrow data does not fit '{info.table_path}': {e.message}") from None
    batches = conformed if isinstance(conformed, list) else [conformed]
    arrow_schema = schema.to_arrow()
    widened = [_widen(b, arrow_schema) for b in batches if b.num_rows]
    if not widened:
        raise invalid("the Arrow stream holds no rows")
    batch = pa.Table.from_batches(widened, schema=arrow_schema).combine_chunks().to_batches()[0]
    for name in pk:
        if batch.column(name).null_count:
            raise invalid(f"primary-key column '{name}' is null in the Arrow data")
    return WritePlan(info, batch, [op] * batch.num_rows, targets)
