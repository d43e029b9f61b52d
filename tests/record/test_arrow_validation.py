"""validate_vectorized (validate_full of large batches) accepts and refuses exactly what Arrow's own full
validation does."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from fluss.record.arrow_validation import VECTORIZED_MIN_ROWS, validate_full, validate_vectorized


def _var_width(type_: pa.DataType, offsets: list[int], data: bytes, validity: list[bool] | None = None) -> pa.Array:
    n = len(offsets) - 1
    dtype = np.int64 if type_ in (pa.large_string(), pa.large_binary()) else np.int32
    bitmap = None
    if validity is not None:
        bitmap = pa.py_buffer(np.packbits(np.array(validity, dtype=bool), bitorder="little").tobytes())
    return pa.Array.from_buffers(type_, n, [bitmap, pa.py_buffer(np.array(offsets, dtype=dtype).tobytes()),
                                            pa.py_buffer(data)])


def _arrow_accepts(rows: pa.RecordBatch) -> bool:
    try:
        rows.validate(full=True)
        return True
    except pa.ArrowInvalid:
        return False


def _ours_accepts(rows: pa.RecordBatch) -> bool:
    try:
        validate_vectorized(rows)
        return True
    except pa.ArrowInvalid:
        return False


CASES = {
    "ascii": (pa.string(), [0, 1, 3, 3, 6], b"abcdef", None, True),
    "multi-byte characters": (pa.string(), [0, 2, 5, 9], "é€😀".encode(), None, True),
    "a value ends inside a character": (pa.string(), [0, 1, 5, 9], "é€😀".encode(), None, False),
    "bytes that are not UTF-8": (pa.string(), [0, 2, 4], b"ab\xff\xfe", None, False),
    "offsets go backwards": (pa.string(), [0, 3, 2, 4], b"abcd", None, False),
    "a null slot over bytes that are not UTF-8": (pa.string(), [0, 2, 4], b"ab\xff\xfe", [True, False], True),
    "binary takes any bytes": (pa.binary(), [0, 2, 4], b"ab\xff\xfe", None, True),
    "binary offsets go backwards": (pa.binary(), [0, 3, 1], b"abcd", None, False),
    "large string not UTF-8": (pa.large_string(), [0, 1, 2], b"a\xc3", None, False),
    "large string": (pa.large_string(), [0, 1, 3], "aé".encode(), None, True),
    "empty values only": (pa.string(), [0, 0, 0], b"", None, True),
}


@pytest.mark.parametrize("name", CASES)
def test_validate_full_agrees_with_arrow(name: str) -> None:
    type_, offsets, data, validity, valid = CASES[name]
    rows = pa.record_batch([_var_width(type_, offsets, data, validity), pa.array(range(len(offsets) - 1))],
                           names=["s", "i"])
    assert _arrow_accepts(rows) is valid  # the case means what its name says
    assert _ours_accepts(rows) is valid


@pytest.mark.parametrize("offsets", [[0, 2, 9], [-1, 2, 4]], ids=["last offset past the data", "negative offset"])
def test_offsets_out_of_the_data_are_refused(offsets: list[int]) -> None:
    """Arrays Arrow will not build, made by patching the offsets of a decoded IPC message (as a hostile writer)."""
    good = pa.record_batch([_var_width(pa.string(), [0, 2, 4], b"abcd")], names=["s"])
    message = good.serialize().to_pybytes()
    original = np.array([0, 2, 4], dtype=np.int32).tobytes()
    assert message.count(original) == 1
    patched = message.replace(original, np.array(offsets, dtype=np.int32).tobytes())
    rows = pa.ipc.read_record_batch(pa.py_buffer(patched), good.schema)
    assert not _arrow_accepts(rows)
    with pytest.raises(pa.ArrowInvalid):
        validate_vectorized(rows)


def test_sliced_columns_are_checked_from_their_own_offset() -> None:
    whole = _var_width(pa.string(), [0, 1, 3, 5], b"a\xff\xfebc")  # value 1 is not UTF-8
    assert not _ours_accepts(pa.record_batch([whole], names=["s"]))
    assert _ours_accepts(pa.record_batch([whole.slice(2)], names=["s"]))
    assert not _ours_accepts(pa.record_batch([whole.slice(1, 1)], names=["s"]))


def test_other_types_keep_arrows_full_validation() -> None:
    too_precise = pa.Array.from_buffers(pa.decimal128(3, 0), 1,
                                        [None, pa.py_buffer((12345).to_bytes(16, "little", signed=True))])
    rows = pa.record_batch([too_precise], names=["d"])
    assert not _arrow_accepts(rows)
    with pytest.raises(pa.ArrowInvalid):
        validate_vectorized(rows)


def test_random_strings_agree_with_arrow() -> None:
    rng = np.random.default_rng(7)
    alphabet = ["a", "é", "€", "😀"]
    for _ in range(200):
        values = ["".join(rng.choice(alphabet, rng.integers(0, 4))) for _ in range(rng.integers(1, 6))]
        data = bytearray("".join(values).encode())
        offsets = np.concatenate([[0], np.cumsum([len(v.encode()) for v in values])]).tolist()
        if data and rng.random() < 0.5:  # corrupt one byte or move one offset
            if rng.random() < 0.5:
                data[rng.integers(0, len(data))] = int(rng.integers(0, 256))
            else:
                k = int(rng.integers(1, len(offsets)))
                offsets[k] = int(np.clip(offsets[k] + rng.integers(-2, 3), 0, len(data)))
        rows = pa.record_batch([_var_width(pa.string(), offsets, bytes(data))], names=["s"])
        assert _ours_accepts(rows) == _arrow_accepts(rows), (offsets, bytes(data))


@pytest.mark.parametrize("num_rows", [3, VECTORIZED_MIN_ROWS + 1])
def test_validate_full_refuses_invalid_utf8_in_small_and_large_batches(num_rows: int) -> None:
    """Small batches take Arrow's validation, large ones the vectorized one: both refuse a bad string column."""
    offsets = list(range(num_rows + 1))
    data = bytearray(b"a" * num_rows)
    valid = pa.record_batch([_var_width(pa.string(), offsets, bytes(data), None)], names=["s"])
    validate_full(valid)
    data[num_rows // 2] = 0xFF
    invalid = pa.record_batch([_var_width(pa.string(), offsets, bytes(data), None)], names=["s"])
    with pytest.raises(pa.ArrowInvalid):
        validate_full(invalid)
