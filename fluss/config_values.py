"""Parsing of Fluss-style option values: memory sizes ("64mb", "1gb"), durations ("30s", "10min", "7d")
and booleans. Shared by the server configuration, table properties and the client ``Config``."""

from __future__ import annotations

import re

from fluss.errors import ErrorCode, FlussError

_SIZE_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}
_DURATION_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "": 1000, "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000, "m": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_memory_size(value: object, key: str = "value") -> int:
    """Bytes in a memory size such as ``64mb``, ``1 gb`` or ``4096`` (never negative)."""
    if isinstance(value, int):
        size = value
    else:
        m = _NUMBER_UNIT.match(str(value))
        unit = m.group(2).lower() if m else None
        if not m or unit not in _SIZE_UNITS:
            raise FlussError(f"Invalid memory size {value!r} for '{key}' (examples: 4096, 64kb, 2mb, 1gb)",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        size = int(float(m.group(1)) * _SIZE_UNITS[unit])
    if size < 0:
        raise FlussError(f"Invalid memory size {value!r} for '{key}': a memory size cannot be negative",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return size


def parse_duration_ms(value: object, key: str = "value") -> int:
    """Milliseconds in a duration such as ``500ms``, ``30s``, ``10min``, ``7d`` (a bare number is seconds)."""
    if isinstance(value, int):
        return value * 1000
    m = _NUMBER_UNIT.match(str(value))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _DURATION_UNITS_MS:
        raise FlussError(f"Invalid duration {value!r} for '{key}' (examples: 500ms, 30s, 10min, 2h, 7d)",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return int(float(m.group(1)) * _DURATION_UNITS_MS[unit])


def parse_bool(value: object, key: str = "value") -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise FlussError(f"Invalid boolean {value!r} for '{key}' (use true or false)", ErrorCode.INVALID_CONFIG_EXCEPTION)


def parse_int(value: object, key: str = "value") -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise FlussError(f"Invalid integer {value!r} for '{key}'", ErrorCode.INVALID_CONFIG_EXCEPTION) from None
