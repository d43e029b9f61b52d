"""KV state across ALTER TABLE ADD: values of an older schema id read with the added columns null, in lookups,
scans, merges and after a restart; rows of an older writer are padded; the row codec refuses unknown ids."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.key.encoding import encode_key
from fluss.record.indexed_rows import decode_evolved, encode_rows
from fluss.record.log_batch import LogBatch, build_batch
from fluss.record.schema_evolution import SchemaHistory
from fluss.server.kv.tablet import KvTablet
from fluss.types import Column, DataTypes, RowSchema

V1 = RowSchema([Column("id", DataTypes.INT()), Column("name", DataTypes.STRING())], ["id"])
V2 = RowSchema([*V1.columns, Column("price", DataTypes.DOUBLE(), "added"), Column("tag", DataTypes.STRING())], ["id"])
COUNTS = [2, 4]


def rows(schema: RowSchema, *values: tuple) -> pa.RecordBatch:
    arrow = schema.to_arrow()
    return pa.RecordBatch.from_arrays([pa.array([v[i] for v in values], arrow.field(i).type)
                                       for i in range(len(arrow))], schema=arrow)


def key(k: int) -> bytes:
    return encode_key([k], [V1.columns[0].data_type])


def test_values_of_an_older_schema_id_read_with_nulls_and_survive_a_restart(tmp_path):
    t = KvTablet.open(tmp_path / "kv", V1, 1, {})
    t.prepare_batch(rows(V1, (1, "a"), (2, "b")), np.zeros(2, np.uint8), None, 0)
    t.flush_up_to(2)
    t.update_schema(V2, 2, COUNTS)
    assert t.lookup_rows([key(1)]).to_pylist() == [{"id": 1, "name": "a", "price": None, "tag": None}]
    # a writer of schema id 1 (two columns) and one of schema id 2
    t.prepare_batch(rows(V1, (2, "b2")), np.zeros(1, np.uint8), None, 2)
    changelog = t.prepare_batch(rows(V2, (3, "c", 1.5, "x")), np.zeros(1, np.uint8), None, 4)
    assert changelog.batch.schema.names == ["id", "name", "price", "tag"]
    t.flush_up_to(5)
    t.close()

    t = KvTablet.open(tmp_path / "kv", V2, 2, {}, COUNTS)  # a restart: values of both ids are stored
    got = sorted(t.scan_all()[0].to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": 1, "name": "a", "price": None, "tag": None},
                   {"id": 2, "name": "b2", "price": None, "tag": None},
                   {"id": 3, "name": "c", "price": 1.5, "tag": "x"}]
    # a partial update of the new column merges into an old value
    t.prepare_batch(rows(V2, (1, None, 9.0, None)), np.zeros(1, np.uint8), [0, 2], 5)
    t.flush_up_to(7)  # -U/+U at offsets 5 and 6
    assert t.lookup_rows([key(1), key(7)]).to_pylist() == [{"id": 1, "name": "a", "price": 9.0, "tag": None},
                                                          {"id": None, "name": None, "price": None, "tag": None}]
    t.close()


def test_replayed_changelog_of_an_older_schema_id_is_read_with_the_new_columns():
    history = SchemaHistory(V2.to_arrow(), COUNTS, 2)
    old = LogBatch(build_batch(rows(V1, (1, "a")), schema_id=1, change_types=np.array([1], np.uint8)))
    assert history.read(old).to_pylist() == [{"id": 1, "name": "a", "price": None, "tag": None}]
    # projected by the server for [3, 0] (only column 0 exists in schema id 1) and for [2] (none exists)
    body = LogBatch(build_batch(rows(V1, (1, "a")).select([0]), schema_id=1))
    assert history.read(body, [3, 0], [3, 0]).to_pylist() == [{"tag": None, "id": 1}]
    assert history.read(body, [2], [2]).to_pylist() == [{"price": None}]


def test_decoding_mixed_schema_ids_keeps_the_order_and_refuses_unknown_ids():
    history = SchemaHistory(V2.to_arrow(), COUNTS, 2)
    old = encode_rows(rows(V1, (1, "a"), (2, "b")), 1)
    new = encode_rows(rows(V2, (3, "c", 2.0, "t")), 2)
    got = decode_evolved([new[0], None, old[1], old[0]], history).to_pylist()
    assert [r["id"] for r in got] == [3, None, 2, 1] and got[0]["price"] == 2.0 and got[2]["price"] is None
    with pytest.raises(FlussError) as e:
        decode_evolved(encode_rows(rows(V1, (1, "a")), 7), history)
    assert e.value.error_code == ErrorCode.KV_STORAGE_EXCEPTION and "schema id 7" in e.value.message
