"""The cross-language vector of nested columns: ``connector/src/test/resources/python-nested-batch.bin`` is a log
batch of ARRAY, MAP and ROW columns written by ``build_batch``; the Java connector's ``NestedBatchTest`` decodes it
(rows the connector writes are read by Python in the Flink tests). Regenerate with ``python -m tests.record.test_nested_java_vector``."""

from __future__ import annotations

from pathlib import Path

from fluss.record.log_batch import COMPRESSION_NONE, build_batch
from fluss.row_convert import rows_to_batch
from fluss.types import Column, RowSchema, parse_type

RESOURCES = Path(__file__).resolve().parents[2] / "connector" / "src" / "test" / "resources"
VECTOR = RESOURCES / "python-nested-batch.bin"

SCHEMA = RowSchema([
    Column("id", parse_type("INT NOT NULL")),
    Column("tags", parse_type("ARRAY<STRING>")),
    Column("attrs", parse_type("MAP<STRING, INT>")),
    Column("p", parse_type("ROW<a INT, b ARRAY<DOUBLE NOT NULL>>")),
    Column("m2", parse_type("MAP<INT, ROW<x STRING, ts TIMESTAMP(3)>>")),
])
ROWS = [
    [1, ["a", None, "ccc"], {"k": 1, "z": None}, {"a": 7, "b": [1.5, -2.0]}, {3: {"x": "y", "ts": None}}],
    [2, None, None, None, None],
    [3, [], {}, {"a": None, "b": []}, {4: None}],
]


def vector_bytes() -> bytes:
    return build_batch(rows_to_batch(ROWS, SCHEMA), schema_id=3, compression=COMPRESSION_NONE)


def test_the_committed_vector_is_what_build_batch_writes():
    assert VECTOR.read_bytes() == vector_bytes(), "regenerate: python -m tests.record.test_nested_java_vector"


if __name__ == "__main__":
    VECTOR.write_bytes(vector_bytes())
