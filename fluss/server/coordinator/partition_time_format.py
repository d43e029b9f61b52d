"""Partition time values of auto-partitioned tables: formatting a time unit's value and reading one back.

A table's pattern is ``table.auto-partition.time-format`` when set, else the unit's default, as Fluss names them::

    HOUR yyyyMMddHH   DAY yyyyMMdd   MONTH yyyyMM   QUARTER yyyyQ   YEAR yyyy

A pattern uses the letters of Java's ``DateTimeFormatter`` that a time unit can have: ``yyyy`` / ``yy`` (year),
``MM`` / ``M`` (month), ``dd`` / ``d`` (day), ``HH`` / ``H`` (hour), ``Q`` / ``QQ`` (quarter); any other
character that may appear in a partition value (``0-9 _ . -``) is itself, and text in single quotes is literal
(``''`` is a quote). A pattern must have exactly the fields of its unit (``yyyy-MM-dd`` for DAY, not
``yyyy-MM`` and not ``yyyy-MM-dd-HH``), so each unit has one name and each name one unit.

Retention reads names back (:meth:`PartitionTimeFormat.parse`) and compares the times they stand for, so a
pattern need not sort as text (``dd.MM.yyyy`` works); a name the pattern does not read is not a time value and
is never dropped.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from fluss.key.partition import validate_partition_value
from fluss.options import config_error

DEFAULT_PATTERNS = {"HOUR": "yyyyMMddHH", "DAY": "yyyyMMdd", "MONTH": "yyyyMM", "QUARTER": "yyyyQ", "YEAR": "yyyy"}
#: The fields (pattern letters) each time unit's values have.
UNIT_FIELDS = {"HOUR": "yMdH", "DAY": "yMd", "MONTH": "yM", "QUARTER": "yQ", "YEAR": "y"}
#: Accepted runs of each letter: run length -> (regex of the value, zero-padded width or 0).
_RUNS = {
    "y": {4: (r"\d{4}", 4), 2: (r"\d{2}", 2)},
    "M": {1: (r"\d{1,2}", 0), 2: (r"\d{2}", 2)},
    "d": {1: (r"\d{1,2}", 0), 2: (r"\d{2}", 2)},
    "H": {1: (r"\d{1,2}", 0), 2: (r"\d{2}", 2)},
    "Q": {1: (r"\d", 0), 2: (r"\d{2}", 2)},
}
_RANGES = {"M": (1, 12), "d": (1, 31), "H": (0, 23), "Q": (1, 4)}


@dataclass(frozen=True)
class _Field:
    letter: str
    width: int  # zero-padded width; 0: as many digits as the value has


@dataclass(frozen=True)
class PartitionTimeFormat:
    """A compiled pattern: :meth:`format` names the unit containing a moment, :meth:`parse` reads a name back."""

    pattern: str
    unit: str
    parts: tuple[str | _Field, ...]
    regex: re.Pattern[str]

    @classmethod
    def of(cls, unit: str, pattern: str | None = None, where: str = "the table") -> PartitionTimeFormat:
        """The format of ``unit`` (``pattern`` None: the unit's default); a bad pattern is a config error."""
        text = DEFAULT_PATTERNS[unit] if pattern is None else pattern
        parts = _tokenize(text, where)
        letters = [p.letter for p in parts if isinstance(p, _Field)]
        wanted = UNIT_FIELDS[unit]
        if sorted(letters) != sorted(wanted):
            names = {"y": "year", "M": "month", "d": "day", "H": "hour", "Q": "quarter"}
            raise config_error(f"'table.auto-partition.time-format' = '{text}' of {where} must have each field of "
                               f"the time unit {unit} once ({', '.join(names[c] for c in wanted)}) and no other, "
                               f"like '{DEFAULT_PATTERNS[unit]}'")
        regex = "".join(f"(?P<{p.letter}>{_RUNS[p.letter][_run_of(p)][0]})" if isinstance(p, _Field)
                        else re.escape(p) for p in parts)
        fmt = cls(text, unit, tuple(parts), re.compile(regex))
        sample = fmt.format(dt.datetime(2024, 12, 31, 23, tzinfo=dt.UTC))
        try:
            validate_partition_value("the time key", sample)
        except Exception as e:
            raise config_error(f"'table.auto-partition.time-format' = '{text}' of {where} makes partition values "
                               f"like '{sample}', which are not valid ({e})") from None
        return fmt

    def format(self, moment: dt.datetime) -> str:
        """The partition value of the unit containing ``moment`` (a local, aware datetime)."""
        values = {"y": moment.year, "M": moment.month, "d": moment.day, "H": moment.hour,
                  "Q": (moment.month - 1) // 3 + 1}
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
            elif p.letter == "y" and p.width == 2:
                out.append(f"{moment.year % 100:02d}")
            else:
                out.append(f"{values[p.letter]:0{p.width}d}" if p.width else str(values[p.letter]))
        return "".join(out)

    def parse(self, value: str) -> tuple[int, int, int, int] | None:
        """The time a partition value stands for as ``(year, month or quarter, day, hour)`` (fields the unit lacks
        are 0), comparable across values of this format; None when ``value`` is not one."""
        m = self.regex.fullmatch(value)
        if m is None:
            return None
        got = {k: int(v) for k, v in m.groupdict().items()}
        for letter, (low, high) in _RANGES.items():
            if letter in got and not low <= got[letter] <= high:
                return None
        year = got["y"] + (2000 if len(m.group("y")) == 2 else 0)
        return year, got.get("M", got.get("Q", 0)), got.get("d", 0), got.get("H", 0)


def _run_of(f: _Field) -> int:
    return f.width if f.width else 1


def _tokenize(pattern: str, where: str) -> list[str | _Field]:
    """Pattern letters (runs) and literals of a Java ``DateTimeFormatter`` pattern, refusing what we do not read."""
    if not pattern:
        raise config_error(f"'table.auto-partition.time-format' of {where} is empty")
    parts: list[str | _Field] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = i + 1
            text = []
            while True:
                if end >= len(pattern):
                    raise config_error(f"'table.auto-partition.time-format' = '{pattern}' of {where} has an "
                                       "unclosed quote")
                if pattern[end] == "'":
                    if end + 1 < len(pattern) and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            parts.append("".join(text) if end > i + 1 else "'")
            i = end + 1
        elif c.isascii() and c.isalpha():
            run = len(pattern) - i - len(pattern[i:].lstrip(c))
            accepted = _RUNS.get(c, {})
            if run not in accepted:
                hint = (f"'{c}' may appear as {' or '.join(c * n for n in sorted(accepted))}" if accepted
                        else "the letters are yyyy/yy, MM/M, dd/d, HH/H and Q/QQ")
                raise config_error(f"'table.auto-partition.time-format' = '{pattern}' of {where}: '{c * run}' is not "
                                   f"a supported pattern field ({hint}; quote literal text: 'T')")
            parts.append(_Field(c, accepted[run][1]))
            i += run
        else:
            parts.append(c)
            i += 1
    return parts
