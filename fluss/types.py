"""Fluss data types, table row schemas, and their Arrow representation.

A :class:`DataType` is one of Fluss's scalar SQL types (BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT,
DOUBLE, CHAR(n), STRING, DECIMAL(p, s), DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), BINARY(n), BYTES)
plus its nullability. ARRAY, MAP and ROW are not supported yet. Types have a canonical text form
(``str(t)``, e.g. ``"DECIMAL(10, 2) NOT NULL"``) that :func:`parse_type` reads back; that text is what the
schema JSON stored in ZooKeeper and sent over RPC carries.

Arrow representation (the log format is Arrow, so this mapping is part of the wire contract)::

    BOOLEAN        bool                 FLOAT          float32
    TINYINT        int8                 DOUBLE         float64
    SMALLINT       int16                CHAR(n)        string     (+ field metadata fluss.type)
    INT            int32                STRING         string
    BIGINT         int64                BINARY(n)      fixed_size_binary(n)
    DECIMAL(p, s)  decimal128(p, s)     BYTES          binary
    DATE           date32
    TIME(p)        p = 0: time32('s'); 1-3: time32('ms'); 4-6: time64('us'); 7-9: time64('ns')
    TIMESTAMP(p)   p = 0: timestamp('s'); 1-3: 'ms'; 4-6: 'us'; 7-9: 'ns'   (no time zone)
    TIMESTAMP_LTZ(p)  same unit as TIMESTAMP(p), tz='UTC' (values are UTC instants)

The unit choice by precision is the one Flink's and Fluss's Java ``ArrowUtils`` use, so Java readers see
the same vectors. Where the Arrow type alone does not determine the Fluss type (CHAR(n), and TIME /
TIMESTAMP / TIMESTAMP_LTZ whose precision is not 0, 3, 6 or 9), :meth:`RowSchema.to_arrow` puts the
canonical type text in the field metadata under ``fluss.type``; :meth:`RowSchema.from_arrow` lets that
metadata win over the Arrow type (users may set it too, e.g. ``{b"fluss.type": b"CHAR(5)"}``).
Values of a precision that is finer than the declared one but coarser than the unit (e.g. a TIMESTAMP(2)
stored in milliseconds) are floored to the declared precision by the row converter.

A :class:`RowSchema` is the ordered list of :class:`Column` plus the primary-key column names; primary-key
columns are always NOT NULL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from fluss.errors import ErrorCode, FlussError

BOOLEAN = "BOOLEAN"
TINYINT = "TINYINT"
SMALLINT = "SMALLINT"
INT = "INT"
BIGINT = "BIGINT"
FLOAT = "FLOAT"
DOUBLE = "DOUBLE"
CHAR = "CHAR"
STRING = "STRING"
DECIMAL = "DECIMAL"
DATE = "DATE"
TIME = "TIME"
TIMESTAMP = "TIMESTAMP"
TIMESTAMP_LTZ = "TIMESTAMP_LTZ"
BINARY = "BINARY"
BYTES = "BYTES"

ROOTS = (
    BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, CHAR, STRING,
    DECIMAL, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ, BINARY, BYTES,
)  # fmt: skip
INTEGER_ROOTS = frozenset({TINYINT, SMALLINT, INT, BIGINT})
FLOAT_ROOTS = frozenset({FLOAT, DOUBLE})
STRING_ROOTS = frozenset({CHAR, STRING})
BINARY_ROOTS = frozenset({BINARY, BYTES})
TEMPORAL_PRECISION_ROOTS = frozenset({TIME, TIMESTAMP, TIMESTAMP_LTZ})

MAX_DECIMAL_PRECISION = 38
MAX_TIME_PRECISION = 9
MAX_LENGTH = 2147483647
DEFAULT_DECIMAL_PRECISION = 10
DEFAULT_TIME_PRECISION = 0
DEFAULT_TIMESTAMP_PRECISION = 6

#: Arrow field-metadata key carrying the canonical Fluss type text of a column.
FLUSS_TYPE_METADATA_KEY = b"fluss.type"
#: Longest allowed column name.
MAX_COLUMN_NAME_LENGTH = 200

_INT_ARROW = {TINYINT: pa.int8(), SMALLINT: pa.int16(), INT: pa.int32(), BIGINT: pa.int64()}
_FIXED_ARROW = {
    BOOLEAN: pa.bool_(),
    **_INT_ARROW,
    FLOAT: pa.float32(),
    DOUBLE: pa.float64(),
    STRING: pa.string(),
    CHAR: pa.string(),
    BYTES: pa.binary(),
    DATE: pa.date32(),
}


def time_unit_of(precision: int) -> str:
    """The Arrow time unit used for a TIME / TIMESTAMP / TIMESTAMP_LTZ of this fractional precision."""
    if precision == 0:
        return "s"
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


#: Number of fractional-second digits each Arrow unit holds.
UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_UNIT_PRECISION = UNIT_DIGITS


def _invalid_type(text: str, why: str) -> FlussError:
    return FlussError(f"invalid data type '{text}': {why}", ErrorCode.INVALID_TABLE_EXCEPTION)


@dataclass(frozen=True)
class DataType:
    """A Fluss scalar type. Parameters not used by the root stay None; missing ones get Fluss's defaults
    (CHAR/BINARY length 1, DECIMAL(10, 0), TIME(0), TIMESTAMP(6), TIMESTAMP_LTZ(6))."""

    root: str
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None

    def __post_init__(self) -> None:
        root = self.root
        if root not in ROOTS:
            raise _invalid_type(str(root), f"unknown type root (supported: {', '.join(ROOTS)})")
        length, precision, scale = self.length, self.precision, self.scale
        if root in (CHAR, BINARY):
            length = 1 if length is None else length
            if not isinstance(length, int) or not 1 <= length <= MAX_LENGTH:
                raise _invalid_type(f"{root}({length})", f"length must be between 1 and {MAX_LENGTH}")
            if precision is not None or scale is not None:
                raise _invalid_type(root, "takes only a length")
        elif length is not None:
            raise _invalid_type(root, "takes no length")
        if root == DECIMAL:
            precision = DEFAULT_DECIMAL_PRECISION if precision is None else precision
            scale = 0 if scale is None else scale
            if not isinstance(precision, int) or not 1 <= precision <= MAX_DECIMAL_PRECISION:
                raise _invalid_type(
                    f"DECIMAL({precision}, {scale})",
                    f"precision must be between 1 and {MAX_DECIMAL_PRECISION}",
                )
            if not isinstance(scale, int) or not 0 <= scale <= precision:
                raise _invalid_type(
                    f"DECIMAL({precision}, {scale})", f"scale must be between 0 and the precision {precision}"
                )
        elif root in TEMPORAL_PRECISION_ROOTS:
            if precision is None:
                precision = DEFAULT_TIME_PRECISION if root == TIME else DEFAULT_TIMESTAMP_PRECISION
            if not isinstance(precision, int) or not 0 <= precision <= MAX_TIME_PRECISION:
                raise _invalid_type(
                    f"{root}({precision})", f"precision must be between 0 and {MAX_TIME_PRECISION}"
                )
            if scale is not None:
                raise _invalid_type(root, "takes only a precision")
        elif precision is not None or scale is not None:
            raise _invalid_type(root, "takes no precision or scale")
        object.__setattr__(self, "length", length)
        object.__setattr__(self, "precision", precision)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "nullable", bool(self.nullable))

    # ------------------------------------------------------------------ text form
    def type_text(self) -> str:
        """The canonical text without the nullability suffix, e.g. ``DECIMAL(10, 2)``."""
        if self.root in (CHAR, BINARY):
            return f"{self.root}({self.length})"
        if self.root == DECIMAL:
            return f"DECIMAL({self.precision}, {self.scale})"
        if self.root in TEMPORAL_PRECISION_ROOTS:
            return f"{self.root}({self.precision})"
        return self.root

    def __str__(self) -> str:
        return self.type_text() if self.nullable else f"{self.type_text()} NOT NULL"

    # ------------------------------------------------------------------ helpers
    def with_nullable(self, nullable: bool) -> DataType:
        return self if nullable == self.nullable else replace(self, nullable=nullable)

    def equals_ignoring_nullability(self, other: DataType) -> bool:
        return self.with_nullable(True) == other.with_nullable(True)

    @property
    def time_unit(self) -> str:
        """The Arrow unit of a TIME / TIMESTAMP / TIMESTAMP_LTZ type."""
        if self.root not in TEMPORAL_PRECISION_ROOTS:
            raise ValueError(f"{self} has no time unit")
        return time_unit_of(self.precision)  # type: ignore[arg-type]

    @property
    def arrow_type_is_exact(self) -> bool:
        """True if :func:`from_arrow` of :meth:`to_arrow` gives this type back (ignoring nullability)."""
        if self.root == CHAR:
            return False
        if self.root in TEMPORAL_PRECISION_ROOTS:
            return self.precision in (0, 3, 6, 9)
        return True

    def to_arrow(self) -> pa.DataType:
        root = self.root
        fixed = _FIXED_ARROW.get(root)
        if fixed is not None:
            return fixed
        if root == DECIMAL:
            return pa.decimal128(self.precision, self.scale)
        if root == BINARY:
            return pa.binary(self.length)
        unit = time_unit_of(self.precision)  # type: ignore[arg-type]
        if root == TIME:
            return pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit)
        if root == TIMESTAMP:
            return pa.timestamp(unit)
        return pa.timestamp(unit, tz="UTC")  # TIMESTAMP_LTZ

    def to_arrow_field(self, name: str) -> pa.Field:
        metadata = None if self.arrow_type_is_exact else {FLUSS_TYPE_METADATA_KEY: self.type_text().encode()}
        return pa.field(name, self.to_arrow(), nullable=self.nullable, metadata=metadata)


class DataTypes:
    """Factories mirroring Fluss's Java ``DataTypes`` (``DataTypes.DECIMAL(10, 2)``)."""

    @staticmethod
    def BOOLEAN() -> DataType:  # noqa: N802
        return DataType(BOOLEAN)

    @staticmethod
    def TINYINT() -> DataType:  # noqa: N802
        return DataType(TINYINT)

    @staticmethod
    def SMALLINT() -> DataType:  # noqa: N802
        return DataType(SMALLINT)

    @staticmethod
    def INT() -> DataType:  # noqa: N802
        return DataType(INT)

    @staticmethod
    def BIGINT() -> DataType:  # noqa: N802
        return DataType(BIGINT)

    @staticmethod
    def FLOAT() -> DataType:  # noqa: N802
        return DataType(FLOAT)

    @staticmethod
    def DOUBLE() -> DataType:  # noqa: N802
        return DataType(DOUBLE)

    @staticmethod
    def CHAR(length: int) -> DataType:  # noqa: N802
        return DataType(CHAR, length=length)

    @staticmethod
    def STRING() -> DataType:  # noqa: N802
        return DataType(STRING)

    @staticmethod
    def DECIMAL(precision: int, scale: int) -> DataType:  # noqa: N802
        return DataType(DECIMAL, precision=precision, scale=scale)

    @staticmethod
    def DATE() -> DataType:  # noqa: N802
        return DataType(DATE)

    @staticmethod
    def TIME(precision: int = DEFAULT_TIME_PRECISION) -> DataType:  # noqa: N802
        return DataType(TIME, precision=precision)

    @staticmethod
    def TIMESTAMP(precision: int = DEFAULT_TIMESTAMP_PRECISION) -> DataType:  # noqa: N802
        return DataType(TIMESTAMP, precision=precision)

    @staticmethod
    def TIMESTAMP_LTZ(precision: int = DEFAULT_TIMESTAMP_PRECISION) -> DataType:  # noqa: N802
        return DataType(TIMESTAMP_LTZ, precision=precision)

    @staticmethod
    def BINARY(length: int) -> DataType:  # noqa: N802
        return DataType(BINARY, length=length)

    @staticmethod
    def BYTES() -> DataType:  # noqa: N802
        return DataType(BYTES)


# ---------------------------------------------------------------------------------------------- parsing

_ALIASES = {
    "BOOLEAN": BOOLEAN,
    "BOOL": BOOLEAN,
    "TINYINT": TINYINT,
    "SMALLINT": SMALLINT,
    "INT": INT,
    "INTEGER": INT,
    "BIGINT": BIGINT,
    "FLOAT": FLOAT,
    "DOUBLE": DOUBLE,
    "DOUBLE PRECISION": DOUBLE,
    "CHAR": CHAR,
    "CHARACTER": CHAR,
    "STRING": STRING,
    "DECIMAL": DECIMAL,
    "DEC": DECIMAL,
    "NUMERIC": DECIMAL,
    "DATE": DATE,
    "TIME": TIME,
    "TIMESTAMP": TIMESTAMP,
    "TIMESTAMP_LTZ": TIMESTAMP_LTZ,
    "BINARY": BINARY,
    "BYTES": BYTES,
}
_UNSUPPORTED = ("ARRAY", "MAP", "ROW", "MULTISET")
_TYPE_RE = re.compile(
    r"""^(?P<name>[A-Z_]+(?:\s+PRECISION)?)
        \s*(?:\(\s*(?P<a>\d+)\s*(?:,\s*(?P<b>\d+)\s*)?\))?
        (?P<suffix>\s+WITHOUT\s+TIME\s+ZONE|\s+WITH\s+LOCAL\s+TIME\s+ZONE)?
        (?P<null>\s+NOT\s+NULL|\s+NULL)?$""",
    re.VERBOSE,
)


def parse_type(text: str) -> DataType:
    """Parse a type's text form: ``INT``, ``decimal(10, 2)``, ``TIMESTAMP(6)``, ``TIMESTAMP_LTZ(3)``,
    ``TIMESTAMP(3) WITH LOCAL TIME ZONE``, ``CHAR(5)``, ``BINARY(4)``, ``STRING NOT NULL``...

    Raises:
        FlussError: INVALID_TABLE_EXCEPTION naming the text when it is not a supported type.
    """
    if isinstance(text, DataType):
        return text
    if not isinstance(text, str):
        raise _invalid_type(repr(text), "expected a type name string")
    norm = " ".join(text.strip().upper().split())
    head = re.split(r"[\s(<]", norm, maxsplit=1)[0]
    if head in _UNSUPPORTED:
        raise FlussError(
            f"data type '{text}' is not supported yet (ARRAY, MAP and ROW are planned)",
            ErrorCode.INVALID_TABLE_EXCEPTION,
        )
    m = _TYPE_RE.match(norm)
    if m is None:
        raise _invalid_type(text, "cannot parse it")
    name = " ".join(m.group("name").split())
    root = _ALIASES.get(name)
    if root is None:
        raise _invalid_type(text, f"unknown type '{name}'")
    a = m.group("a")
    b = m.group("b")
    suffix = " ".join((m.group("suffix") or "").split())
    if suffix:
        if root != TIMESTAMP:
            raise _invalid_type(text, f"'{suffix}' only follows TIMESTAMP")
        if suffix == "WITH LOCAL TIME ZONE":
            root = TIMESTAMP_LTZ
    nullable = (m.group("null") or "").strip() != "NOT NULL"
    if b is not None and root != DECIMAL:
        raise _invalid_type(text, f"{root} takes at most one parameter")
    kwargs: dict[str, Any] = {}
    if a is not None:
        if root in (CHAR, BINARY):
            kwargs["length"] = int(a)
        elif root == DECIMAL or root in TEMPORAL_PRECISION_ROOTS:
            kwargs["precision"] = int(a)
            if b is not None:
                kwargs["scale"] = int(b)
        else:
            raise _invalid_type(text, f"{root} takes no parameters")
    try:
        return DataType(root, nullable=nullable, **kwargs)
    except FlussError as e:
        raise _invalid_type(text, e.message.split(": ", 1)[-1]) from None


# ------------------------------------------------------------------------------------------- from arrow


def from_arrow(t: pa.DataType, nullable: bool = True) -> DataType:
    """The Fluss type for an Arrow type (see the module docstring for the mapping).

    Unsigned integers widen losslessly (uint8 -> SMALLINT, uint16 -> INT, uint32 -> BIGINT); a dictionary
    type maps as its value type; any time zone on a timestamp means TIMESTAMP_LTZ.

    Raises:
        FlussError: INVALID_TABLE_EXCEPTION naming the Arrow type when Fluss has no such type.
    """
    types = pa.types
    if types.is_dictionary(t):
        return from_arrow(t.value_type, nullable)
    if types.is_boolean(t):
        return DataType(BOOLEAN, nullable)
    if types.is_int8(t):
        return DataType(TINYINT, nullable)
    if types.is_int16(t) or types.is_uint8(t):
        return DataType(SMALLINT, nullable)
    if types.is_int32(t) or types.is_uint16(t):
        return DataType(INT, nullable)
    if types.is_int64(t) or types.is_uint32(t):
        return DataType(BIGINT, nullable)
    if types.is_float32(t):
        return DataType(FLOAT, nullable)
    if types.is_float64(t):
        return DataType(DOUBLE, nullable)
    if types.is_string(t) or types.is_large_string(t):
        return DataType(STRING, nullable)
    if types.is_fixed_size_binary(t):
        return DataType(BINARY, nullable, length=t.byte_width)
    if types.is_binary(t) or types.is_large_binary(t):
        return DataType(BYTES, nullable)
    if types.is_decimal128(t) or (types.is_decimal(t) and t.precision <= MAX_DECIMAL_PRECISION):
        return DataType(DECIMAL, nullable, precision=t.precision, scale=t.scale)
    if types.is_date32(t) or types.is_date64(t):
        return DataType(DATE, nullable)
    if types.is_time32(t) or types.is_time64(t):
        return DataType(TIME, nullable, precision=_UNIT_PRECISION[t.unit])
    if types.is_timestamp(t):
        root = TIMESTAMP if t.tz is None else TIMESTAMP_LTZ
        return DataType(root, nullable, precision=_UNIT_PRECISION[t.unit])
    if types.is_null(t):
        raise FlussError(
            "Arrow type 'null' has no Fluss type (declare the column type explicitly)",
            ErrorCode.INVALID_TABLE_EXCEPTION,
        )
    if types.is_list(t) or types.is_large_list(t) or types.is_map(t) or types.is_struct(t):
        raise FlussError(
            f"Arrow type '{t}' is not supported yet (ARRAY, MAP and ROW are planned)",
            ErrorCode.INVALID_TABLE_EXCEPTION,
        )
    raise FlussError(f"Arrow type '{t}' is not supported by Fluss", ErrorCode.INVALID_TABLE_EXCEPTION)


def _family(t: DataType) -> str:
    if t.root in INTEGER_ROOTS:
        return "integer"
    if t.root in FLOAT_ROOTS:
        return "float"
    if t.root in STRING_ROOTS:
        return "string"
    if t.root in BINARY_ROOTS:
        return "binary"
    return t.root


# ---------------------------------------------------------------------------------------------- schema

_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def validate_column_name(name: object) -> str:
    """Check a column name (non-empty string, no control characters, at most 200 characters)."""
    if not isinstance(name, str):
        raise FlussError(f"column name {name!r} is not a string", ErrorCode.INVALID_TABLE_EXCEPTION)
    if not name or not name.strip():
        raise FlussError("column name must not be empty", ErrorCode.INVALID_TABLE_EXCEPTION)
    if _CONTROL_CHARS.search(name):
        raise FlussError(
            f"column name {name!r} contains control characters", ErrorCode.INVALID_TABLE_EXCEPTION
        )
    if len(name) > MAX_COLUMN_NAME_LENGTH:
        raise FlussError(
            f"column name '{name[:40]}...' is {len(name)} characters long (max {MAX_COLUMN_NAME_LENGTH})",
            ErrorCode.INVALID_TABLE_EXCEPTION,
        )
    return name


@dataclass(frozen=True)
class Column:
    name: str
    data_type: DataType
    comment: str | None = None

    def __post_init__(self) -> None:
        validate_column_name(self.name)
        if isinstance(self.data_type, str):
            object.__setattr__(self, "data_type", parse_type(self.data_type))
        if not isinstance(self.data_type, DataType):
            raise FlussError(
                f"column '{self.name}': {self.data_type!r} is not a DataType",
                ErrorCode.INVALID_TABLE_EXCEPTION,
            )


@dataclass
class RowSchema:
    """The columns of a table (in order) and its primary-key column names (empty for a log table).

    Primary-key columns are made NOT NULL on construction.
    """

    columns: list[Column]
    primary_keys: list[str] = field(default_factory=list)
    _arrow: pa.Schema | None = field(default=None, init=False, repr=False, compare=False)
    _index: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        columns = list(self.columns)
        pks = list(self.primary_keys or [])
        index: dict[str, int] = {}
        for i, col in enumerate(columns):
            if not isinstance(col, Column):
                raise FlussError(
                    f"schema entry {i} ({col!r}) is not a Column", ErrorCode.INVALID_TABLE_EXCEPTION
                )
            if col.name in index:
                raise FlussError(f"duplicate column name '{col.name}'", ErrorCode.INVALID_TABLE_EXCEPTION)
            index[col.name] = i
        if not columns:
            raise FlussError("a schema needs at least one column", ErrorCode.INVALID_TABLE_EXCEPTION)
        seen: set[str] = set()
        for pk in pks:
            if pk not in index:
                raise FlussError(
                    f"primary key column '{pk}' does not exist (columns: {', '.join(index)})",
                    ErrorCode.INVALID_TABLE_EXCEPTION,
                )
            if pk in seen:
                raise FlussError(
                    f"primary key column '{pk}' is listed twice", ErrorCode.INVALID_TABLE_EXCEPTION
                )
            seen.add(pk)
            i = index[pk]
            col = columns[i]
            if col.data_type.nullable:
                columns[i] = replace(col, data_type=col.data_type.with_nullable(False))
        self.columns = columns
        self.primary_keys = pks
        self._index = index

    # ------------------------------------------------------------------ lookups
    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def column_types(self) -> list[DataType]:
        return [c.data_type for c in self.columns]

    @property
    def primary_key_indices(self) -> list[int]:
        return [self._index[pk] for pk in self.primary_keys]

    def index_of(self, name: str, error_code: int = ErrorCode.INVALID_COLUMN_PROJECTION) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise FlussError(
                f"column '{name}' does not exist (columns: {', '.join(self._index)})", error_code
            ) from None

    def column(self, name: str) -> Column:
        return self.columns[self.index_of(name)]

    def __len__(self) -> int:
        return len(self.columns)

    # ------------------------------------------------------------------ arrow
    def to_arrow(self) -> pa.Schema:
        """The Arrow schema of the table's log batches (cached)."""
        if self._arrow is None:
            self._arrow = pa.schema([c.data_type.to_arrow_field(c.name) for c in self.columns])
        return self._arrow

    @classmethod
    def from_arrow(cls, schema: pa.Schema, primary_keys: Iterable[str] | None = None) -> RowSchema:
        """Build a schema from an Arrow schema (field nullability, ``fluss.type`` metadata wins over the
        Arrow type; ``comment`` metadata becomes the column comment).

        Raises:
            FlussError: INVALID_TABLE_EXCEPTION naming the column for bad names, duplicates, unsupported
                types or unknown primary-key columns.
        """
        if not isinstance(schema, pa.Schema):
            raise FlussError(
                f"expected a pyarrow.Schema, got {type(schema).__name__}", ErrorCode.INVALID_TABLE_EXCEPTION
            )
        columns = []
        for f in schema:
            validate_column_name(f.name)
            columns.append(Column(f.name, _field_type(f), _field_comment(f)))
        return cls(columns, list(primary_keys or []))

    # ------------------------------------------------------------------ json
    def to_json(self) -> dict:
        """Stable JSON form: ``{"columns": [{"name", "type", "comment"}], "primary_keys": [...]}``."""
        return {
            "columns": [
                {"name": c.name, "type": str(c.data_type), "comment": c.comment} for c in self.columns
            ],
            "primary_keys": list(self.primary_keys),
        }

    @classmethod
    def from_json(cls, data: Mapping) -> RowSchema:
        try:
            cols = [Column(c["name"], parse_type(c["type"]), c.get("comment")) for c in data["columns"]]
            pks = list(data.get("primary_keys") or [])
        except (KeyError, TypeError) as e:
            raise FlussError(
                f"malformed schema JSON: missing or bad {e}", ErrorCode.INVALID_TABLE_EXCEPTION
            ) from None
        return cls(cols, pks)


def _field_comment(f: pa.Field) -> str | None:
    if f.metadata and b"comment" in f.metadata:
        return f.metadata[b"comment"].decode()
    return None


def _field_type(f: pa.Field) -> DataType:
    meta = f.metadata.get(FLUSS_TYPE_METADATA_KEY) if f.metadata else None
    try:
        arrow_derived = from_arrow(f.type, f.nullable)
    except FlussError as e:
        if meta is None:
            raise FlussError(f"column '{f.name}': {e.message}", e.error_code) from None
        arrow_derived = None
    if meta is None:
        return arrow_derived  # type: ignore[return-value]
    try:
        declared = parse_type(meta.decode())
    except FlussError as e:
        raise FlussError(f"column '{f.name}': {e.message}", e.error_code) from None
    if arrow_derived is not None and _family(arrow_derived) != _family(declared):
        raise FlussError(
            f"column '{f.name}': fluss.type metadata '{declared}' does not fit Arrow type '{f.type}'",
            ErrorCode.INVALID_TABLE_EXCEPTION,
        )
    return declared.with_nullable(declared.nullable and f.nullable)


def type_of_field(f: pa.Field) -> DataType:
    """The Fluss type of an Arrow field (metadata ``fluss.type`` wins over the Arrow type)."""
    return _field_type(f)


def types_of_schema(schema: pa.Schema) -> list[DataType]:
    return [_field_type(f) for f in schema]


__all__ = [
    "BIGINT", "BINARY", "BOOLEAN", "BYTES", "CHAR", "DATE", "DECIMAL", "DOUBLE", "FLOAT", "INT",
    "SMALLINT", "STRING", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "TINYINT",
    "Column", "DataType", "DataTypes", "RowSchema", "FLUSS_TYPE_METADATA_KEY", "from_arrow", "parse_type",
    "time_unit_of", "type_of_field", "types_of_schema", "validate_column_name",
]  # fmt: skip
