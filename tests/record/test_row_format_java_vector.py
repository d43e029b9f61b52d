"""The cross-language vectors of the row log formats: ``connector/src/test/resources/python-row-batches.bin`` holds
log batches written by ``build_batch`` in the INDEXED and COMPACTED formats (and the same rows as ARROW), for a
table of every scalar type, nested ARRAY / MAP / ROW columns and two schema ids (id 1: the first columns; id 2 adds
the rest, as ALTER TABLE ADD does); ``python-row-batches.json`` says what each batch is. The Java connector's
``RowBodyReaderTest`` decodes the row batches (remote segments of a row-format log are read by the connector
itself) and checks them against hand-written values and against its Arrow reader's decoding of the ARROW batches.
Regenerate (committed files, not built at test time) with ``python -m tests.record.test_row_format_java_vector``."""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal
from pathlib import Path

from fluss.record.log_batch import COMPRESSION_NONE, build_batch
from fluss.row_convert import rows_to_batch
from fluss.types import Column, RowSchema, parse_type

RESOURCES = Path(__file__).resolve().parents[2] / "connector" / "src" / "test" / "resources"
VECTOR = RESOURCES / "python-row-batches.bin"
MANIFEST = RESOURCES / "python-row-batches.json"

COLUMNS = [
    ("id", "INT NOT NULL"), ("flag", "BOOLEAN"), ("tiny", "TINYINT"), ("small", "SMALLINT"), ("big", "BIGINT"),
    ("f32", "FLOAT"), ("f64", "DOUBLE"), ("code", "CHAR(3)"), ("name", "STRING"), ("dec", "DECIMAL(10, 2)"),
    ("dec_big", "DECIMAL(38, 6)"), ("day", "DATE"), ("t0", "TIME(0)"), ("t3", "TIME(3)"), ("t6", "TIME(6)"),
    ("t9", "TIME(9)"), ("ts0", "TIMESTAMP(0)"), ("ts3", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"),
    ("ts9", "TIMESTAMP(9)"), ("ltz3", "TIMESTAMP_LTZ(3)"), ("ltz6", "TIMESTAMP_LTZ(6)"), ("bin", "BINARY(2)"),
    ("raw", "BYTES"),
    # schema id 2 adds these (ALTER TABLE ADD)
    ("tags", "ARRAY<STRING>"), ("nums", "ARRAY<INT NOT NULL>"), ("attrs", "MAP<STRING, INT>"),
    ("p", "ROW<a INT, b ARRAY<DOUBLE NOT NULL>, c STRING, d DECIMAL(20, 3)>"),
    ("m2", "MAP<INT, ROW<x STRING, ts TIMESTAMP(3)>>"), ("grid", "ARRAY<ARRAY<BIGINT>>"),
    ("rows", "ARRAY<ROW<k STRING, v MAP<STRING, BOOLEAN>>>"), ("after", "STRING"),
]
SCHEMA_1_COLUMNS = 24
SCHEMA = RowSchema([Column(n, parse_type(t)) for n, t in COLUMNS])
SCHEMA_1 = RowSchema([Column(n, parse_type(t)) for n, t in COLUMNS[:SCHEMA_1_COLUMNS]])

NULLS = [1] + [None] * (len(COLUMNS) - 1)
EDGES = [
    2, True, -128, -32768, -(2**63), float("-inf"), float("nan"), "abc", "", Decimal("-99999999.99"),
    Decimal("-12345678901234567890123456789012.123456"), dt.date(1, 1, 1), dt.time(0, 0, 0), dt.time(23, 59, 59, 999000),
    dt.time(0, 0, 0, 1), dt.time(12, 0, 0, 999999), dt.datetime(1969, 12, 31, 23, 59, 59),
    dt.datetime(1900, 1, 1, 0, 0, 0, 1000), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1960, 6, 1, 12, 0, 0, 123456), dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
    dt.datetime(2024, 2, 29, 1, 2, 3, 456789, tzinfo=dt.UTC), b"\x00\xff", b"",
    ["", None, "日本語"], [0, -1, 2**31 - 1], {"k": -(2**31), "z": None},
    {"a": None, "b": [], "c": None, "d": Decimal("-1.001")}, {4: None, 5: {"x": None, "ts": None}},
    [[1, None], None, []], [{"k": "a", "v": {"t": True, "f": None}}, None, {"k": None, "v": None}], None,
]
OTHER = [
    3, False, 127, 32767, 2**63 - 1, 3.5, -0.0, "xyz", "héllo wörld", Decimal("0.01"),
    Decimal("98765432109876543210987654321098.654321"), dt.date(2024, 6, 30), dt.time(1, 2, 3), dt.time(1, 2, 3, 4000),
    dt.time(23, 59, 59, 999999), dt.time(0, 0, 1, 5), dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 12, 34, 56, 789000),
    dt.datetime(1, 1, 1), dt.datetime(2262, 4, 11, 23, 47, 16, 854775), dt.datetime(1969, 12, 31, 23, 59, 59, 999000,
                                                                                    tzinfo=dt.UTC),
    dt.datetime(2000, 1, 1, tzinfo=dt.UTC), b"ab", bytes(range(256)) * 3,
    [], [], {}, {"a": 7, "b": [1.5, -2.0], "c": "x" * 300, "d": Decimal("12345678901234567.891")},
    {3: {"x": "y", "ts": dt.datetime(2020, 5, 5, 5, 5, 5, 5000)}}, [[2**40]], [], "tail",
]


def _random_rows(rng: random.Random, start: int, n: int) -> list[list]:
    """Rows of random values (about one value in five null) for the comparison with the Arrow reader."""
    def maybe(v):
        return None if rng.random() < 0.2 else v

    rows = []
    for i in range(start, start + n):
        ts = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rng.randrange(-2 * 10**15, 5 * 10**15))
        rows.append([
            i, maybe(rng.random() < 0.5), maybe(rng.randrange(-128, 128)), maybe(rng.randrange(-32768, 32768)),
            maybe(rng.randrange(-(2**63), 2**63) >> rng.randrange(64)), maybe(rng.uniform(-1e6, 1e6)),
            maybe(rng.uniform(-1e300, 1e300)), maybe("".join(rng.choice("ab€") for _ in range(3))),
            maybe("s" * rng.randrange(0, 40)), maybe(Decimal(rng.randrange(-(10**10) + 1, 10**10)).scaleb(-2)),
            maybe(Decimal(rng.randrange(-(10**38) + 1, 10**38)).scaleb(-6)),
            maybe(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-700000, 700000))),
            maybe(dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60))),
            maybe(dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1000) * 1000)),
            maybe(dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(10**6))),
            maybe(dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(10**6))),
            maybe(ts.replace(microsecond=0)), maybe(ts.replace(microsecond=ts.microsecond // 1000 * 1000)), maybe(ts),
            maybe(ts), maybe(ts.replace(microsecond=ts.microsecond // 1000 * 1000, tzinfo=dt.UTC)),
            maybe(ts.replace(tzinfo=dt.UTC)), maybe(bytes([rng.randrange(256), rng.randrange(256)])),
            maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(10)))),
            maybe([maybe(str(rng.random())) for _ in range(rng.randrange(4))]),
            maybe([rng.randrange(-(2**31), 2**31) for _ in range(rng.randrange(5))]),
            maybe({f"k{j}": maybe(rng.randrange(100)) for j in range(rng.randrange(4))}),
            maybe({"a": maybe(rng.randrange(10)), "b": [rng.random() for _ in range(rng.randrange(3))],
                   "c": maybe("c" * rng.randrange(5)), "d": maybe(Decimal(rng.randrange(-(10**20) + 1, 10**20)).scaleb(-3))}),
            maybe({j: maybe({"x": maybe(str(j)), "ts": maybe(ts.replace(microsecond=0))}) for j in range(rng.randrange(3))}),
            maybe([maybe([maybe(rng.randrange(-5, 5)) for _ in range(rng.randrange(3))]) for _ in range(rng.randrange(3))]),
            maybe([maybe({"k": maybe("k"), "v": maybe({"a": maybe(rng.random() < 0.5)})}) for _ in range(rng.randrange(3))]),
            maybe(f"after{i}"),
        ])
    return rows


def batches() -> tuple[bytes, dict]:
    """The vector file's bytes and its manifest."""
    rng = random.Random(15)
    old_rows = [NULLS[:SCHEMA_1_COLUMNS], EDGES[:SCHEMA_1_COLUMNS], OTHER[:SCHEMA_1_COLUMNS]] + \
        [r[:SCHEMA_1_COLUMNS] for r in _random_rows(rng, 10, 40)]
    new_rows = [NULLS, EDGES, OTHER] + _random_rows(rng, 100, 60)
    parts, manifest = [], []
    position = 0
    for fmt in ("INDEXED", "COMPACTED", "ARROW"):
        for schema_id, schema, rows, base in ((1, SCHEMA_1, old_rows, 0), (2, SCHEMA, new_rows, len(old_rows))):
            change_types = [1 + (i % 4) for i in range(len(rows))] if schema_id == 2 else None
            data = build_batch(rows_to_batch(rows, schema), schema_id=schema_id, compression=COMPRESSION_NONE,
                               change_types=change_types, base_offset=base, log_format=fmt)
            manifest.append({"format": fmt, "schema_id": schema_id, "position": position, "length": len(data),
                             "rows": len(rows), "base_offset": base})
            parts.append(data)
            position += len(data)
    info = {"names": [n for n, _ in COLUMNS], "types": [t for _, t in COLUMNS],
            "schema_column_counts": [SCHEMA_1_COLUMNS, len(COLUMNS)], "batches": manifest}
    return b"".join(parts), info


def test_the_committed_vectors_are_what_build_batch_writes():
    data, info = batches()
    assert VECTOR.read_bytes() == data, "regenerate: python -m tests.record.test_row_format_java_vector"
    assert json.loads(MANIFEST.read_text()) == info, "regenerate: python -m tests.record.test_row_format_java_vector"


if __name__ == "__main__":
    data, info = batches()
    VECTOR.write_bytes(data)
    MANIFEST.write_text(json.dumps(info, indent=1) + "\n")
