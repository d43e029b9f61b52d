"""The row encoding of nested columns (INDEXED and COMPACTED layouts) (fluss/record/nested_codec.py through the row codec): random nested
types and values survive encode + decode exactly, including nulls at every depth and sliced input."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluss.record import compacted_rows, indexed_rows
from fluss.row_convert import batch_to_pylist, rows_to_batch
from fluss.types import Column, RowSchema, parse_type
from tests.nested_strategies import ALL_LEAVES, expected, nested_types, values_of


@st.composite
def schemas_and_rows(draw):
    types = draw(st.lists(nested_types(ALL_LEAVES), min_size=1, max_size=3))
    schema = RowSchema([Column("id", parse_type("INT NOT NULL"))] +
                       [Column(f"c{i}", t) for i, t in enumerate(types)], ["id"])
    rows = draw(st.lists(st.tuples(*[values_of(t) for t in types]), min_size=1, max_size=12))
    return schema, [[i, *r] for i, r in enumerate(rows)]


@settings(max_examples=60, deadline=None)
@given(schemas_and_rows(), st.sampled_from([indexed_rows, compacted_rows]))
def test_random_nested_rows_round_trip_through_both_row_layouts(case, codec):
    schema, rows = case
    encode_rows, decode_rows = codec.encode_rows, codec.decode_rows
    batch = rows_to_batch(rows, schema)
    values = encode_rows(batch, 3)
    back = decode_rows(values, batch.schema, 3)
    back.validate(full=True)
    assert batch_to_pylist(back) == [
        {"id": r[0], **{f"c{i}": expected(c.data_type, v) for i, (c, v) in enumerate(zip(schema.columns[1:], r[1:],
                                                                                      strict=True))}}
        for r in rows
    ]
    # one value at a time, and a slice of the batch, decode the same
    assert batch_to_pylist(decode_rows(values[-1:], batch.schema)) == batch_to_pylist(back)[-1:]
    tail = batch.slice(len(rows) // 2)
    assert batch_to_pylist(decode_rows(encode_rows(tail, 3), batch.schema)) == batch_to_pylist(tail)


@pytest.mark.parametrize("codec", [indexed_rows, compacted_rows])
def test_empty_and_all_null_nested_values(codec):
    schema = RowSchema([Column("a", parse_type("ARRAY<MAP<INT, ROW<x STRING>>>")), Column("b", parse_type("ROW<y INT>"))])
    rows = [[[], None], [None, {"y": None}], [[{}], {"y": 1}], [[None, {1: None, 2: {"x": ""}}], None]]
    batch = rows_to_batch(rows, schema)
    back = codec.decode_rows(codec.encode_rows(batch, 1), batch.schema)
    assert back.to_pylist() == batch.to_pylist()
    assert pa.Table.from_batches([back]).equals(pa.Table.from_batches([batch]))


@pytest.mark.parametrize("codec", [indexed_rows, compacted_rows])
def test_empty_children_without_buffers_as_arrow_java_writes_them(codec):
    """A null MAP whose entries are empty arrays with zero-length offsets/data buffers (what Arrow Java writes)."""
    map_type = pa.map_(pa.string(), pa.bool_())
    keys = pa.Array.from_buffers(pa.string(), 0, [None, pa.py_buffer(b""), pa.py_buffer(b"")])
    items = pa.Array.from_buffers(pa.bool_(), 0, [None, pa.py_buffer(b"")])
    entries = pa.StructArray.from_arrays([keys, items], fields=[map_type.key_field, map_type.item_field])
    column = pa.Array.from_buffers(map_type, 1, [pa.py_buffer(bytes([0])), pa.py_buffer(bytes(8))], null_count=1,
                                   children=[entries])
    batch = pa.RecordBatch.from_arrays([pa.array([2], pa.int32()), column], names=["id", "m"])
    assert codec.decode_rows(codec.encode_rows(batch, 1), batch.schema).to_pylist() == [{"id": 2, "m": None}]
