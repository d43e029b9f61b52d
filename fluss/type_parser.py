"""Reading a type's text form back into a :class:`fluss.types.DataType`.

Accepted (case-insensitive; whitespace is free between tokens):

* scalars with Fluss's and Flink's aliases and defaults: ``INT``/``INTEGER``, ``DECIMAL``/``DEC``/``NUMERIC``
  ``(p[, s])``, ``CHAR``/``CHARACTER(n)``, ``BINARY(n)``, ``TIME(p)``, ``TIMESTAMP(p)``,
  ``TIMESTAMP(p) WITHOUT TIME ZONE``, ``TIMESTAMP(p) WITH LOCAL TIME ZONE`` (= ``TIMESTAMP_LTZ(p)``),
  ``DOUBLE PRECISION``, ``BOOL``...;
* nested types: ``ARRAY<T>`` (or ``ARRAY(T)``), ``MAP<K, V>``, ``ROW<name T, ...>`` (or ``ROW(...)``); a ROW
  field is a name (plain, or in backticks with ```` `` ```` for a backtick) optionally followed by ``:``
  (the official Python client's ``row<seq: int>``), its type, and optionally a description in single quotes;
* a trailing ``NOT NULL`` (or ``NULL``) after any type, at any depth.

So the canonical text (``str(t)``), Flink's ``DESCRIBE`` output and the official Python client's
``get_column_types()`` strings all parse. Errors are ``FlussError(INVALID_TABLE_EXCEPTION)`` quoting the text.
"""

from __future__ import annotations

import re
from typing import Any

from fluss.errors import ErrorCode, FlussError
from fluss.types import (
    ARRAY,
    BIGINT,
    BINARY,
    BOOLEAN,
    BYTES,
    CHAR,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    MAP,
    ROW,
    SMALLINT,
    STRING,
    TEMPORAL_PRECISION_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    DataField,
    DataType,
)

_ALIASES = {
    "BOOLEAN": BOOLEAN, "BOOL": BOOLEAN, "TINYINT": TINYINT, "SMALLINT": SMALLINT, "INT": INT, "INTEGER": INT,
    "BIGINT": BIGINT, "FLOAT": FLOAT, "DOUBLE": DOUBLE, "CHAR": CHAR, "CHARACTER": CHAR, "STRING": STRING,
    "DECIMAL": DECIMAL, "DEC": DECIMAL, "NUMERIC": DECIMAL, "DATE": DATE, "TIME": TIME, "TIMESTAMP": TIMESTAMP,
    "TIMESTAMP_LTZ": TIMESTAMP_LTZ, "BINARY": BINARY, "BYTES": BYTES, "ARRAY": ARRAY, "MAP": MAP, "ROW": ROW,
}  # fmt: skip
_UNSUPPORTED = ("MULTISET", "INTERVAL", "RAW", "VARIANT")

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
      | (?P<number>\d+)
      | `(?P<quoted>(?:[^`]|``)*)`
      | '(?P<string>(?:[^']|'')*)'
      | (?P<punct>[<>(),:])
    )""",
    re.VERBOSE,
)


def _invalid(text: str, why: str) -> FlussError:
    return FlussError(f"invalid data type '{text}': {why}", ErrorCode.INVALID_TABLE_EXCEPTION)


class _Tokens:
    """The tokens of a type text: (kind, value) pairs, kind in word/number/quoted/string/punct."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.items: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None:
                raise _invalid(text, f"cannot parse it (unexpected {text[pos:].strip()[:20]!r})")
            kind = m.lastgroup or ""
            value = m.group(kind)
            if kind == "quoted":
                value = value.replace("``", "`")
            elif kind == "string":
                value = value.replace("''", "'")
            self.items.append((kind, value))
            pos = m.end()
        self.pos = 0

    def peek(self, offset: int = 0) -> tuple[str, str] | None:
        i = self.pos + offset
        return self.items[i] if i < len(self.items) else None

    def peek_word(self, offset: int = 0) -> str | None:
        tok = self.peek(offset)
        return tok[1].upper() if tok is not None and tok[0] == "word" else None

    def next(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise _invalid(self.text, "cannot parse it (it ends too early)")
        self.pos += 1
        return tok

    def accept(self, punct: str) -> bool:
        tok = self.peek()
        if tok == ("punct", punct):
            self.pos += 1
            return True
        return False

    def expect(self, *puncts: str) -> str:
        tok = self.peek()
        if tok is None or tok[0] != "punct" or tok[1] not in puncts:
            got = "the end" if tok is None else repr(tok[1])
            raise _invalid(self.text, f"cannot parse it (expected {' or '.join(repr(p) for p in puncts)}, got {got})")
        self.pos += 1
        return tok[1]

    def accept_words(self, *words: str) -> bool:
        for i, w in enumerate(words):
            if self.peek_word(i) != w:
                return False
        self.pos += len(words)
        return True


_CLOSING = {"<": ">", "(": ")"}


def _parse(tokens: _Tokens) -> DataType:
    text = tokens.text
    kind, word = tokens.next()
    if kind != "word":
        raise _invalid(text, f"cannot parse it (expected a type name, got {word!r})")
    name = word.upper()
    if name in _UNSUPPORTED:
        raise FlussError(f"data type '{text}' is not supported by Fluss ({name} has no Fluss type)",
                         ErrorCode.INVALID_TABLE_EXCEPTION)
    if name == "DOUBLE":
        tokens.accept_words("PRECISION")
    root = _ALIASES.get(name)
    if root is None:
        raise _invalid(text, f"unknown type '{name}'")
    kwargs: dict[str, Any] = {}
    if root == ARRAY:
        close = _CLOSING[tokens.expect("<", "(")]
        kwargs["element_type"] = _parse(tokens)
        tokens.expect(close)
    elif root == MAP:
        close = _CLOSING[tokens.expect("<", "(")]
        kwargs["key_type"] = _parse(tokens)
        tokens.expect(",")
        kwargs["value_type"] = _parse(tokens)
        tokens.expect(close)
    elif root == ROW:
        close = _CLOSING[tokens.expect("<", "(")]
        fields = [_parse_field(tokens)]
        while tokens.accept(","):
            fields.append(_parse_field(tokens))
        tokens.expect(close)
        kwargs["fields"] = tuple(fields)
    else:
        params = _parse_params(tokens)
        if params:
            if len(params) > 1 and root != DECIMAL:
                raise _invalid(text, f"{root} takes at most one parameter")
            if root in (CHAR, BINARY):
                kwargs["length"] = params[0]
            elif root == DECIMAL or root in TEMPORAL_PRECISION_ROOTS:
                kwargs["precision"] = params[0]
                if len(params) > 1:
                    kwargs["scale"] = params[1]
            else:
                raise _invalid(text, f"{root} takes no parameters")
    if tokens.peek_word() in ("WITH", "WITHOUT"):
        if tokens.accept_words("WITHOUT", "TIME", "ZONE"):
            suffix, new_root = "WITHOUT TIME ZONE", TIMESTAMP
        elif tokens.accept_words("WITH", "LOCAL", "TIME", "ZONE"):
            suffix, new_root = "WITH LOCAL TIME ZONE", TIMESTAMP_LTZ
        else:
            raise _invalid(text, "cannot parse it (expected WITH LOCAL TIME ZONE or WITHOUT TIME ZONE)")
        if root != TIMESTAMP:
            raise _invalid(text, f"'{suffix}' only follows TIMESTAMP")
        root = new_root
    nullable = True
    if tokens.accept_words("NOT", "NULL"):
        nullable = False
    else:
        tokens.accept_words("NULL")
    try:
        return DataType(root, nullable=nullable, **kwargs)
    except FlussError as e:
        raise _invalid(text, e.message.split(": ", 1)[-1]) from None


def _parse_params(tokens: _Tokens) -> list[int]:
    if not tokens.accept("("):
        return []
    params = []
    while True:
        kind, value = tokens.next()
        if kind != "number":
            raise _invalid(tokens.text, f"cannot parse it (expected a number, got {value!r})")
        params.append(int(value))
        if tokens.expect(",", ")") == ")":
            return params


def _parse_field(tokens: _Tokens) -> DataField:
    kind, name = tokens.next()
    if kind not in ("word", "quoted"):
        raise _invalid(tokens.text, f"cannot parse it (expected a ROW field name, got {name!r})")
    tokens.accept(":")
    data_type = _parse(tokens)
    description = None
    tok = tokens.peek()
    if tok is not None and tok[0] == "string":
        description = tok[1]
        tokens.pos += 1
    try:
        return DataField(name, data_type, description)
    except FlussError as e:
        raise _invalid(tokens.text, e.message) from None


def parse_type(text: str | DataType) -> DataType:
    """Parse a type's text form: ``INT``, ``decimal(10, 2)``, ``TIMESTAMP(6)``, ``TIMESTAMP_LTZ(3)``,
    ``TIMESTAMP(3) WITH LOCAL TIME ZONE``, ``CHAR(5)``, ``BINARY(4)``, ``STRING NOT NULL``,
    ``ARRAY<INT NOT NULL>``, ``MAP<STRING, ARRAY<INT>>``, ``ROW<a INT, `b c` STRING 'note'> NOT NULL``,
    ``row<seq: int, label: string>``...

    Raises:
        FlussError: INVALID_TABLE_EXCEPTION naming the text when it is not a supported type.
    """
    if isinstance(text, DataType):
        return text
    if not isinstance(text, str):
        raise _invalid(repr(text), "expected a type name string")
    if not text.strip():
        raise _invalid(text, "cannot parse it")
    tokens = _Tokens(text)
    result = _parse(tokens)
    rest = tokens.peek()
    if rest is not None:
        raise _invalid(text, f"cannot parse it (unexpected {rest[1]!r} after the type)")
    return result


__all__ = ["parse_type"]
