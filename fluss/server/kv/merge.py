"""Merge engines: how an incoming upsert or delete of a primary key combines with the stored row.

A :class:`MergeEngine` is chosen from the table properties by :meth:`MergeEngine.from_properties`, which
also validates the configuration against the schema up front (so a bad table never gets a tablet)::

    table.merge-engine                        unset = last row | first_row | versioned | aggregation
    table.merge-engine.versioned.ver-column   versioned: the INT / BIGINT / TIMESTAMP / TIMESTAMP_LTZ column
    fields.<col>.agg                          aggregation: the function of a non-key column (see aggregation.py)
    fields.<col>.listagg.delimiter            aggregation: listagg / string_agg delimiter [,]
    table.delete.behavior                     ALLOW | IGNORE | DISABLE (default ALLOW for last row, IGNORE
                                              for the others; ALLOW is rejected for first_row / versioned)

Engines work on rows of *physical* Python values, one list per row in column order (integers for the
temporal types in their Arrow unit, ``Decimal``, ``str``, ``bytes``, floats, bools, ``None``); see
:func:`physical_rows` / :func:`rows_to_batch`. An engine implements two operations:

- ``upsert(old, new, targets)``: the row to store; returning ``old`` itself (identity) means "no change"
  (nothing is written and nothing is emitted to the changelog).
- ``delete(old, targets)``: only called when deletes are allowed; ``None`` removes the row, a row updates it.

``targets`` is the frozen set of target column indices of a partial update, or ``None`` for a full row.
Engine semantics (matching Apache Fluss):

- last row (default): the new row replaces the stored one. Partial update: target columns come from the
  new row, the others keep their stored values (null for a new key). A partial delete nulls the target
  non-key columns and removes the row only if all its non-key columns are then null.
- ``first_row``: the first row of a key is kept; later upserts are ignored (the changelog only has +I).
- ``versioned``: the new row replaces the stored one when its version is greater than or equal to the
  stored version; a null version counts as the smallest value, so a null or smaller version is ignored.
- ``aggregation``: each non-key column folds the new value into the stored one with its function;
  partial update aggregates the target columns only. With ``table.delete.behavior=ALLOW`` a delete removes
  the row (a partial delete behaves as for the last-row engine).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from enum import Enum, StrEnum
from typing import Any

import pyarrow as pa

from fluss import table_options
from fluss.errors import ErrorCode, FlussError
from fluss.server.kv.aggregation import (
    DEFAULT_FUNCTION,
    DEFAULT_LISTAGG_DELIMITER,
    LISTAGG,
    STRING_AGG,
    FieldAggregator,
    create_aggregator,
)
from fluss.types import BIGINT, INT, TIMESTAMP, TIMESTAMP_LTZ, RowSchema

MERGE_ENGINE = table_options.MERGE_ENGINE.key
VERSIONED_VER_COLUMN = table_options.MERGE_ENGINE_VERSIONED_VER_COLUMN.key
DELETE_BEHAVIOR = table_options.DELETE_BEHAVIOR.key
CHANGELOG_IMAGE = table_options.CHANGELOG_IMAGE.key
FIELDS_PREFIX = "fields."

LAST_ROW = "last_row"
FIRST_ROW = "first_row"
VERSIONED = "versioned"
AGGREGATION = "aggregation"
ENGINES = (FIRST_ROW, VERSIONED, AGGREGATION)

Row = list[Any]


class DeleteBehavior(StrEnum):
    ALLOW = "ALLOW"
    IGNORE = "IGNORE"
    DISABLE = "DISABLE"


class ChangelogImage(StrEnum):
    """FULL: updates emit -U (old row) and +U (new row). WAL: updates emit only +U."""

    FULL = "FULL"
    WAL = "WAL"


def _config_error(message: str) -> FlussError:
    return FlussError(message, ErrorCode.INVALID_CONFIG_EXCEPTION)


def _enum_option(props: Mapping[str, str], key: str, enum: type[Enum], default: Enum | None) -> Any:
    raw = props.get(key)
    if raw is None or not str(raw).strip():
        return default
    try:
        return enum(str(raw).strip().upper())
    except ValueError:
        allowed = "|".join(e.value for e in enum)
        raise _config_error(f"invalid value '{raw}' for option '{key}' (expected {allowed})") from None


def changelog_image_of(props: Mapping[str, str]) -> ChangelogImage:
    """``table.changelog.image`` [FULL]."""
    return _enum_option(props, CHANGELOG_IMAGE, ChangelogImage, ChangelogImage.FULL)


class MergeEngine(ABC):
    """Combines incoming rows with stored rows of one primary-key table (see the module docstring)."""

    #: Name as in ``table.merge-engine`` (``last_row`` for the default).
    name: str = LAST_ROW
    #: Whether a writer may name target columns (partial update).
    supports_partial_update: bool = False
    #: True when ``upsert`` only ever chooses between the whole old and the whole new row (no field
    #: merging and no version comparison); the tablet then works on encoded values directly.
    whole_row: bool = False

    def __init__(self, schema: RowSchema, delete_behavior: DeleteBehavior) -> None:
        self.schema = schema
        self.delete_behavior = delete_behavior
        self.pk_indices = frozenset(schema.primary_key_indices)
        self.value_indices = [i for i in range(len(schema.columns)) if i not in self.pk_indices]

    # ------------------------------------------------------------------ factory
    @staticmethod
    def from_properties(props: Mapping[str, str], schema: RowSchema) -> MergeEngine:
        """The merge engine of a table, validated against its schema.

        Raises:
            FlussError: INVALID_CONFIG_EXCEPTION naming the option or column: unknown engine, missing or
                badly typed version column, unknown aggregate function, aggregate function on a key
                column or on a type it does not accept, ALLOW deletes on first_row / versioned.
            FlussError: INVALID_TABLE_EXCEPTION if the schema has no primary key.
        """
        if not schema.primary_keys:
            raise FlussError("a merge engine needs a primary-key table", ErrorCode.INVALID_TABLE_EXCEPTION)
        raw = props.get(MERGE_ENGINE)
        engine = (raw or "").strip().lower()
        behavior = _enum_option(props, DELETE_BEHAVIOR, DeleteBehavior, None)
        if engine in ("", LAST_ROW, "default"):
            return LastRowEngine(schema, behavior or DeleteBehavior.ALLOW)
        if engine not in ENGINES:
            raise _config_error(
                f"unknown merge engine '{raw}' in option '{MERGE_ENGINE}' (supported: {', '.join(ENGINES)}, or unset)"
            )
        if behavior == DeleteBehavior.ALLOW and engine in (FIRST_ROW, VERSIONED):
            raise _config_error(
                f"option '{DELETE_BEHAVIOR}'=ALLOW is not supported by the '{engine}' merge engine (use IGNORE or DISABLE)"
            )
        behavior = behavior or DeleteBehavior.IGNORE
        if engine == FIRST_ROW:
            return FirstRowEngine(schema, behavior)
        if engine == VERSIONED:
            return VersionedEngine(schema, behavior, props.get(VERSIONED_VER_COLUMN))
        return AggregationEngine(schema, behavior, props)

    # ------------------------------------------------------------------ partial update
    def check_target_columns(self, target_columns: Sequence[int] | None) -> frozenset[int] | None:
        """Validate a partial update's target columns; ``None`` when the update covers the whole row.

        Raises:
            FlussError: INVALID_TARGET_COLUMN naming the problem: an index out of range, a missing
                primary-key column, a NOT NULL column left out, or an engine without partial update.
        """
        if target_columns is None:
            return None
        n = len(self.schema.columns)
        targets = set()
        for i in target_columns:
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n:
                raise FlussError(
                    f"target column index {i!r} is out of range (the table has {n} columns)",
                    ErrorCode.INVALID_TARGET_COLUMN,
                )
            targets.add(i)
        if len(targets) == n:
            return None
        names = self.schema.column_names
        missing = [names[i] for i in sorted(self.pk_indices) if i not in targets]
        if missing:
            raise FlussError(
                f"partial update target columns must include every primary-key column; missing {', '.join(repr(m) for m in missing)}",
                ErrorCode.INVALID_TARGET_COLUMN,
            )
        if not self.supports_partial_update:
            raise FlussError(
                f"partial update is not supported by the '{self.name}' merge engine",
                ErrorCode.INVALID_TARGET_COLUMN,
            )
        for i in self.value_indices:
            if i not in targets and not self.schema.columns[i].data_type.nullable:
                raise FlussError(
                    f"partial update must include NOT NULL column '{names[i]}' (columns left out are null for new keys)",
                    ErrorCode.INVALID_TARGET_COLUMN,
                )
        return frozenset(targets)

    def _restrict(self, new: Row, old: Row | None, targets: frozenset[int] | None) -> Row:
        """``new`` with the non-target columns taken from ``old`` (null when there is no old row)."""
        if targets is None:
            return new
        if old is None:
            return [v if i in targets else None for i, v in enumerate(new)]
        return [v if i in targets else o for i, (v, o) in enumerate(zip(new, old, strict=True))]

    def _partial_delete(self, old: Row, targets: frozenset[int] | None) -> Row | None:
        if targets is None:
            return None
        row = [None if (i in targets and i not in self.pk_indices) else v for i, v in enumerate(old)]
        if all(row[i] is None for i in self.value_indices):
            return None
        return row

    # ------------------------------------------------------------------ operations
    @abstractmethod
    def upsert(self, old: Row | None, new: Row, targets: frozenset[int] | None) -> Row:
        """The row to store for an upsert (``old`` itself = unchanged)."""

    def delete(self, old: Row, targets: frozenset[int] | None) -> Row | None:
        """The row left after a delete (``None`` = remove it); called only when deletes are allowed."""
        return self._partial_delete(old, targets)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(delete_behavior={self.delete_behavior.value})"


class LastRowEngine(MergeEngine):
    name = LAST_ROW
    supports_partial_update = True
    whole_row = True

    def upsert(self, old: Row | None, new: Row, targets: frozenset[int] | None) -> Row:
        return self._restrict(new, old, targets)


class FirstRowEngine(MergeEngine):
    name = FIRST_ROW
    whole_row = True

    def upsert(self, old: Row | None, new: Row, targets: frozenset[int] | None) -> Row:
        return new if old is None else old


class VersionedEngine(MergeEngine):
    name = VERSIONED

    def __init__(self, schema: RowSchema, delete_behavior: DeleteBehavior, ver_column: str | None) -> None:
        super().__init__(schema, delete_behavior)
        if ver_column is None or not ver_column.strip():
            raise _config_error(
                f"the 'versioned' merge engine needs option '{VERSIONED_VER_COLUMN}' (the version column)"
            )
        ver_column = ver_column.strip()
        if ver_column not in schema.column_names:
            raise _config_error(
                f"version column '{ver_column}' of option '{VERSIONED_VER_COLUMN}' does not exist "
                f"(columns: {', '.join(schema.column_names)})"
            )
        t = schema.column(ver_column).data_type
        if t.root not in (INT, BIGINT, TIMESTAMP, TIMESTAMP_LTZ):
            raise _config_error(
                f"version column '{ver_column}' must be INT, BIGINT, TIMESTAMP or TIMESTAMP_LTZ, but is {t}"
            )
        self.ver_column = ver_column
        self.ver_index = schema.index_of(ver_column)

    def upsert(self, old: Row | None, new: Row, targets: frozenset[int] | None) -> Row:
        if old is None:
            return new
        v_new = new[self.ver_index]
        v_old = old[self.ver_index]
        if v_new is None:
            return new if v_old is None else old
        if v_old is None or v_new >= v_old:
            return new
        return old


class AggregationEngine(MergeEngine):
    name = AGGREGATION
    supports_partial_update = True

    def __init__(self, schema: RowSchema, delete_behavior: DeleteBehavior, props: Mapping[str, str]) -> None:
        super().__init__(schema, delete_behavior)
        names = schema.column_names
        functions: dict[str, str] = {}
        delimiters: dict[str, str] = {}
        for key, value in props.items():
            if not key.startswith(FIELDS_PREFIX):
                continue
            rest = key[len(FIELDS_PREFIX) :]
            for suffix, target in (
                (".agg", functions),
                (".listagg.delimiter", delimiters),
                (".string_agg.delimiter", delimiters),
            ):
                if rest.endswith(suffix):
                    column = rest[: -len(suffix)]
                    if column not in names:
                        raise _config_error(
                            f"option '{key}' names column '{column}', which does not exist (columns: {', '.join(names)})"
                        )
                    target[column] = value
                    break
        self.aggregators: list[FieldAggregator | None] = []
        for i, name in enumerate(names):
            if i in self.pk_indices:
                if name in functions:
                    raise _config_error(
                        f"option '{FIELDS_PREFIX}{name}.agg': primary-key column '{name}' cannot have an aggregate function"
                    )
                self.aggregators.append(None)
                continue
            fn = functions.get(name, DEFAULT_FUNCTION)
            delimiter = delimiters.get(name, DEFAULT_LISTAGG_DELIMITER)
            if fn.strip().lower() not in (LISTAGG, STRING_AGG):
                delimiter = DEFAULT_LISTAGG_DELIMITER
            self.aggregators.append(create_aggregator(fn, name, schema.columns[i].data_type, delimiter))

    def upsert(self, old: Row | None, new: Row, targets: frozenset[int] | None) -> Row:
        if old is None:
            return self._restrict(new, None, targets)
        out = list(old)
        for i, agg in enumerate(self.aggregators):
            if agg is None or (targets is not None and i not in targets):
                continue
            out[i] = agg.agg(old[i], new[i])
        return out

    def function_of(self, column: str) -> str | None:
        agg = self.aggregators[self.schema.index_of(column)]
        return None if agg is None else agg.name


# ================================================================================ physical values


def _physical_type(t: pa.DataType) -> pa.DataType | None:
    """The integer type that temporal Arrow types are viewed as (None = converted as they are)."""
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_date64(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    return None


def physical_columns(batch: pa.RecordBatch) -> list[list[Any]]:
    """The columns of a batch as lists of physical Python values."""
    cols = []
    for arr in batch.columns:
        phys = _physical_type(arr.type)
        cols.append((arr.view(phys) if phys is not None else arr).to_pylist())
    return cols


def physical_rows(batch: pa.RecordBatch) -> list[Row]:
    """The rows of a batch as lists of physical Python values."""
    cols = physical_columns(batch)
    if not cols:
        return [[] for _ in range(batch.num_rows)]
    return [list(r) for r in zip(*cols, strict=True)]


def rows_to_batch(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.RecordBatch:
    """A batch of ``schema`` from rows of physical values (inverse of :func:`physical_rows`)."""
    arrays = []
    for i, f in enumerate(schema):
        values = [r[i] for r in rows]
        phys = _physical_type(f.type)
        if phys is not None:
            arrays.append(pa.array(values, type=phys).view(f.type))
        else:
            arrays.append(pa.array(values, type=f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


__all__ = [
    "AGGREGATION", "CHANGELOG_IMAGE", "DELETE_BEHAVIOR", "FIRST_ROW", "LAST_ROW", "MERGE_ENGINE",
    "VERSIONED", "VERSIONED_VER_COLUMN", "AggregationEngine", "ChangelogImage", "DeleteBehavior",
    "FirstRowEngine", "LastRowEngine", "MergeEngine", "VersionedEngine", "changelog_image_of",
    "physical_columns", "physical_rows", "rows_to_batch",
]  # fmt: skip
