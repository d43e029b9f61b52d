"""A plain-dict model of a primary-key table, for checking KvTablet against (property tests).

The model keeps rows as tuples of physical values keyed by the primary-key value, and for each operation
returns the changelog records (change type, row tuple) the table must emit. It is written from the
merge-engine rules in the docs, independently of fluss.server.kv.merge.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from fluss.server.kv.merge import physical_rows
from fluss.types import Column, DataTypes, RowSchema

INS, UB, UA, D = 1, 2, 3, 4

# id (pk), name, v, ts (version), f, flag
SCHEMA = RowSchema(
    [
        Column("id", DataTypes.INT()),
        Column("name", DataTypes.STRING()),
        Column("v", DataTypes.BIGINT()),
        Column("ts", DataTypes.BIGINT()),
        Column("f", DataTypes.DOUBLE()),
        Column("flag", DataTypes.BOOLEAN()),
    ],
    ["id"],
)
NCOLS = 6
NON_PK = range(1, NCOLS)

AGG_PROPS = {
    "table.merge-engine": "aggregation",
    "fields.name.agg": "listagg",
    "fields.name.listagg.delimiter": ";",
    "fields.v.agg": "sum",
    "fields.ts.agg": "first_value_ignore_nulls",
    "fields.f.agg": "max",
    "fields.flag.agg": "bool_and",
}


def _skip_null(fn):
    def agg(a, b):
        if b is None:
            return a
        if a is None:
            return b
        return fn(a, b)

    return agg


MODEL_AGGS = {
    1: _skip_null(lambda a, b: a + ";" + b),
    2: _skip_null(lambda a, b: a + b),
    3: lambda a, b: b if a is None else a,
    4: _skip_null(max),
    5: _skip_null(lambda a, b: a and b),
}


@dataclass
class Model:
    engine: str  # last_row | first_row | versioned | aggregation
    wal: bool = False
    deletes: str = "ALLOW"  # effective behaviour: ALLOW applies deletes, IGNORE skips them
    rows: dict[int, tuple] = field(default_factory=dict)

    def copy(self) -> Model:
        return Model(self.engine, self.wal, self.deletes, dict(self.rows))

    def _update(self, old: tuple, new: tuple) -> list[tuple[int, tuple]]:
        return [(UA, new)] if self.wal else [(UB, old), (UA, new)]

    def upsert(self, row: tuple, targets: frozenset[int] | None) -> list[tuple[int, tuple]]:
        key = row[0]
        old = self.rows.get(key)
        if old is None:
            new = row if targets is None else tuple(v if i in targets else None for i, v in enumerate(row))
            self.rows[key] = new
            return [(INS, new)]
        if self.engine == "first_row":
            return []
        if self.engine == "versioned":
            vn, vo = row[3], old[3]
            if vn is None and vo is not None:
                return []
            if vn is not None and vo is not None and vn < vo:
                return []
            new = row
        elif self.engine == "aggregation":
            new = tuple(
                old[i]
                if i == 0 or (targets is not None and i not in targets)
                else MODEL_AGGS[i](old[i], row[i])
                for i in range(NCOLS)
            )
        else:
            new = row if targets is None else tuple(v if i in targets else old[i] for i, v in enumerate(row))
        self.rows[key] = new
        return self._update(old, new)

    def delete(self, row: tuple, targets: frozenset[int] | None) -> list[tuple[int, tuple]]:
        key = row[0]
        old = self.rows.get(key)
        if old is None or self.deletes != "ALLOW":
            return []
        if targets is not None:
            new = tuple(None if (i in targets and i != 0) else v for i, v in enumerate(old))
            if any(new[i] is not None for i in NON_PK):
                self.rows[key] = new
                return self._update(old, new)
        del self.rows[key]
        return [(D, old)]


def random_row(rng: random.Random, keys: int) -> tuple:
    def maybe(v):
        return None if rng.random() < 0.2 else v

    return (
        rng.randrange(keys),
        maybe(rng.choice(["a", "b", "cc", "", "é"])),
        maybe(rng.randrange(-100, 100)),
        maybe(rng.randrange(0, 10)),
        maybe(float(rng.randrange(-50, 50)) / 2),
        maybe(rng.random() < 0.6),
    )


def to_batch(rows: list[tuple]) -> pa.RecordBatch:
    arrow = SCHEMA.to_arrow()
    return pa.RecordBatch.from_arrays(
        [pa.array([r[i] for r in rows], type=arrow.field(i).type) for i in range(NCOLS)], schema=arrow
    )


def changelog_records(changelog) -> list[tuple[int, tuple]]:
    rows = physical_rows(changelog.batch)
    return [
        (int(ct), tuple(r)) for ct, r in zip(np.asarray(changelog.change_types).tolist(), rows, strict=True)
    ]


def state_of(batch: pa.RecordBatch) -> dict[int, tuple]:
    return {r[0]: tuple(r) for r in physical_rows(batch)}
