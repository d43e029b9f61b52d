"""Rows leaving the gateway: Arrow data as JSON rows (the inverse of ``json_rows``) or as an Arrow IPC stream.

JSON values per type: integers and booleans as JSON numbers/booleans, FLOAT/DOUBLE as numbers (non-finite ones
as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``), DECIMAL as a base-10 string (exact), DATE
``"2026-01-31"``, TIME ``"12:34:56.789"``, TIMESTAMP ``"2026-01-31T12:34:56.789"``, TIMESTAMP_LTZ
``"2026-01-31T12:34:56.789Z"`` (UTC), BINARY/BYTES base64. Each column is converted with one Arrow cast where
possible; rows are then zipped into dicts and serialised by orjson.

An Arrow response is an IPC stream (``application/vnd.apache.arrow.stream``) whose schema metadata carries the
response's non-row fields (``fluss.response`` = their JSON), e.g. a scan's next offsets.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable

import orjson
import pyarrow as pa
import pyarrow.compute as pc

ARROW_STREAM = "application/vnd.apache.arrow.stream"
RESPONSE_METADATA_KEY = b"fluss.response"


def column_to_json(arr: pa.Array | pa.ChunkedArray) -> list:
    t = arr.type
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_decimal(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return pc.cast(arr, pa.string()).to_pylist()
    if pa.types.is_timestamp(t):
        text = pc.replace_substring(pc.cast(arr, pa.string()), " ", "T", max_replacements=1)
        return text.to_pylist()
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_large_binary(t):
        return [None if v is None else base64.b64encode(v).decode() for v in arr.to_pylist()]
    if pa.types.is_floating(t):
        values = arr.to_pylist()
        if pc.any(pc.is_nan(arr)).as_py() or pc.any(pc.is_inf(arr)).as_py():
            return [_float_word(v) for v in values]
        return values
    return arr.to_pylist()


def _float_word(v: float | None) -> float | str | None:
    if v is None or math.isfinite(v):
        return v
    if math.isnan(v):
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def rows_to_json(data: pa.RecordBatch | pa.Table) -> list[dict]:
    names = data.schema.names
    columns = [column_to_json(data.column(i)) for i in range(len(names))]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)] if columns else []


def dumps(document: object) -> bytes:
    return orjson.dumps(document)


def arrow_stream(data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch], schema: pa.Schema,
                 response: dict | None = None) -> bytes:
    """An Arrow IPC stream of ``data`` whose schema metadata holds ``response`` (JSON) when given."""
    if response is not None:
        schema = schema.with_metadata({**(schema.metadata or {}), RESPONSE_METADATA_KEY: orjson.dumps(response)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        if isinstance(data, pa.Table):
            for batch in data.to_batches():
                writer.write_batch(batch.replace_schema_metadata(schema.metadata))
        elif isinstance(data, pa.RecordBatch):
            if data.num_rows:
                writer.write_batch(data.replace_schema_metadata(schema.metadata))
        else:
            for batch in data:
                writer.write_batch(batch.replace_schema_metadata(schema.metadata))
    return sink.getvalue().to_pybytes()


def read_arrow_stream(body: bytes) -> pa.Table:
    """An Arrow IPC stream body as a table (raises ``pa.ArrowInvalid`` when it is not one)."""
    with pa.ipc.open_stream(pa.BufferReader(body)) as reader:
        return reader.read_all()
