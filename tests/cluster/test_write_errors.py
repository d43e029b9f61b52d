"""Writes never fail silently: a row that cannot be written raises at ``append``/``upsert``/``delete`` (as the
official client does), Arrow and pandas data at the call, and whatever fails later (conversion, the server)
makes ``flush()`` raise a FlussError naming the row, the column and the reason."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

from fluss import EARLIEST_OFFSET, FlussError, Schema, TableDescriptor, TablePath

pytestmark = pytest.mark.asyncio(loop_scope="session")

EVENTS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("kind", pa.string()),
                    ("at", pa.timestamp("ns"))])


async def _rows(table, buckets=1) -> list[dict]:
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: EARLIEST_OFFSET for b in range(buckets)})
    return (await scanner.to_arrow()).sort_by("id").select(["id", "kind"]).to_pylist()


async def test_bad_rows_raise_at_the_call_in_every_input_shape(conn, admin, database):
    path = TablePath(database, "events")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS)))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    bad_calls = [
        (lambda: writer.append({"id": "not-a-number", "kind": "click", "at": None}), "column 'id'"),
        (lambda: writer.append({"kind": "x", "at": None}), "missing non-nullable field 'id'"),
        (lambda: writer.append({"id": 1, "kind": "x", "at": None, "extra": 1}), "unknown column 'extra'"),
        (lambda: writer.append((1, "x")), "has 2 values; expected 3 values"),
        (lambda: writer.append([None, "x", None]), "null value in a NOT NULL column"),
        (lambda: writer.write_pandas(pd.DataFrame({"id": ["x"], "kind": ["a"], "at": [None]})), "'id'"),
        (lambda: writer.write_arrow(pa.table({"id": [1], "kind": ["a"]})), "missing column(s) 'at'"),
        (lambda: writer.write_arrow_batch(pa.record_batch({"id": [None], "kind": ["a"], "at": [None]},
                                                          schema=pa.schema([("id", pa.int64()), ("kind", pa.string()),
                                                                            ("at", pa.timestamp("ns"))]))),
         "null value in a NOT NULL column"),
    ]
    for call, needle in bad_calls:
        with pytest.raises(FlussError) as e:
            call()
        assert needle in e.value.message, e.value.message
        assert str(path) in e.value.message or "Arrow" in e.value.message or "column" in e.value.message
    writer.append({"id": 1, "kind": "ok", "at": None})
    writer.write_pandas(pd.DataFrame({"id": [2], "kind": ["ok"], "at": [pd.NaT]}))
    await writer.flush()  # nothing failed: no error
    assert await _rows(table) == [{"id": 1, "kind": "ok"}, {"id": 2, "kind": "ok"}]


async def test_a_row_that_fails_later_makes_flush_raise_naming_row_column_and_reason(conn, admin, database):
    path = TablePath(database, "late")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS)))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    writer.append({"id": 1, "kind": "before", "at": dt.datetime(2026, 1, 1)})
    # a datetime is the right type, but year 3000 does not fit TIMESTAMP(9): found when the rows are converted
    bad = writer.append({"id": 2, "kind": "far", "at": dt.datetime(3000, 1, 1)})
    writer.append({"id": 3, "kind": "after", "at": None})
    with pytest.raises(FlussError) as e:
        await writer.flush()
    message = e.value.message
    assert f"1 write(s) to table '{path}' failed since the last flush" in message, message
    assert "row #1 {'id': 2, 'kind': 'far'" in message and "column 'at'" in message, message
    assert "out of bounds" in message, message
    with pytest.raises(FlussError) as own:
        await bad.wait()
    assert "column 'at'" in own.value.message
    assert await _rows(table) == [{"id": 1, "kind": "before"}, {"id": 3, "kind": "after"}]
    writer.append({"id": 4, "kind": "next", "at": None})
    await writer.flush()  # the failure was reported once


async def test_upsert_and_delete_refuse_bad_keys_at_the_call(conn, admin, database):
    path = TablePath(database, "accounts")
    schema = pa.schema([("id", pa.int32()), ("balance", pa.decimal128(10, 2))])
    await admin.create_table(path, TableDescriptor(Schema(schema, primary_keys=["id"])))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    for call, needle in [
        (lambda: writer.upsert({"id": "7", "balance": None}), "column 'id' (INT NOT NULL): expected int, got str"),
        (lambda: writer.upsert({"id": 7, "balance": 1.5}), "expected decimal.Decimal or int, got float"),
        (lambda: writer.upsert({"id": 2**40, "balance": None}), "out of range for INT"),
        (lambda: writer.delete({"id": "7"}), "column 'id' (INT NOT NULL): expected int, got str"),
        (lambda: writer.delete([]), "has 0 values"),
    ]:
        with pytest.raises(FlussError) as e:
            call()
        assert needle in e.value.message and str(path) in e.value.message, e.value.message
    writer.upsert({"id": 7, "balance": 10})
    await writer.flush()
    assert await table.new_lookup().create_lookuper().lookup({"id": 7}) is not None
