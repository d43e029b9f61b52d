"""The change type of one record in a log batch.

Log tables are append-only: every record is ``+A``. The log of a primary-key table is its changelog, where every
record says what happened to its key: ``+I`` (first insert), ``-U``/``+U`` (the row before and after an update) and
``-D`` (delete). The byte values are part of the log format (``fluss/record/log_batch.py``) and must never change.
"""

from __future__ import annotations

from enum import IntEnum


class ChangeType(IntEnum):
    AppendOnly = 0
    Insert = 1
    UpdateBefore = 2
    UpdateAfter = 3
    Delete = 4

    def short_string(self) -> str:
        """``+A``, ``+I``, ``-U``, ``+U`` or ``-D``."""
        return _SHORT[self]

    @classmethod
    def from_short_string(cls, text: str) -> ChangeType:
        try:
            return _FROM_SHORT[text]
        except KeyError:
            raise ValueError(f"unknown change type {text!r} (expected one of {', '.join(_FROM_SHORT)})") from None

    def __str__(self) -> str:
        return self.short_string()


_SHORT = {
    ChangeType.AppendOnly: "+A",
    ChangeType.Insert: "+I",
    ChangeType.UpdateBefore: "-U",
    ChangeType.UpdateAfter: "+U",
    ChangeType.Delete: "-D",
}
_FROM_SHORT = {v: k for k, v in _SHORT.items()}

#: Largest valid byte value of a change type (for vectorized validation of a change-type vector).
MAX_CHANGE_TYPE = max(ChangeType)
