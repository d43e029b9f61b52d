"""Fluss data types, table row schemas, and their Arrow representation.

A :class:`DataType` is one of Fluss's SQL types plus its nullability: the scalars BOOLEAN, TINYINT, SMALLINT,
INT, BIGINT, FLOAT, DOUBLE, CHAR(n), STRING, DECIMAL(p, s), DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p),
BINARY(n), BYTES, and the nested ARRAY<T>, MAP<K, V> and ROW<name T, ...>, nested to any depth with
nullability at every level. A MAP key is always NOT NULL (Arrow map keys cannot be null, and Fluss's clients
make the key non-nullable on construction), so ``MAP<STRING, INT>`` and ``MAP<STRING NOT NULL, INT>`` are the
same type.

Two text forms:

* the canonical text ``str(t)``, e.g. ``DECIMAL(10, 2) NOT NULL``, ``ARRAY<INT NOT NULL>``,
  ``MAP<STRING NOT NULL, ROW<a INT, b STRING>>`` - Fluss's (and the official Rust/Python client's core)
  ``DataType`` display form. It is what the schema JSON stored in ZooKeeper and sent over RPC carries, and
  :func:`parse_type` (``fluss.type_parser``) reads it back (it also reads Flink's and the official Python
  client's spellings). A ROW field name that is not a plain identifier is written in backticks.
* :func:`display_type_text`, the official Python client's ``Schema.get_column_types()`` form: lower case,
  default precisions left out, e.g. ``int NOT NULL``, ``decimal(10,2)``, ``timestamp``, ``array<string>``,
  ``map<string NOT NULL,int>``, ``row<seq: int, label: string>``.

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
    ARRAY<T>       list<item: T>                      (item nullable as T)
    MAP<K, V>      map<key: K not null, value: V>     (pyarrow's ``map_``: entries struct of key, value)
    ROW<a A, ...>  struct<a: A, ...>                  (field nullable as A; a description becomes the
                                                       child field's ``comment`` metadata)

The unit choice by precision is the one Flink's and Fluss's Java ``ArrowUtils`` use, so Java readers see
the same vectors. Where the Arrow type alone does not determine the Fluss type (CHAR(n), TIME / TIMESTAMP /
TIMESTAMP_LTZ whose precision is not 0, 3, 6 or 9, and any nested type holding one of them),
:meth:`RowSchema.to_arrow` puts the canonical text of the column's whole type in the field metadata under
``fluss.type``; :meth:`RowSchema.from_arrow` lets that metadata win over the Arrow type (users may set it
too, e.g. ``{b"fluss.type": b"CHAR(5)"}``). Values of a precision that is finer than the declared one but
coarser than the unit (e.g. a TIMESTAMP(2) stored in milliseconds) are floored to the declared precision by
the row converter.

A :class:`RowSchema` is the ordered list of :class:`Column` plus the primary-key column names; primary-key
columns are always NOT NULL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

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
ARRAY = "ARRAY"
MAP = "MAP"
ROW = "ROW"

SCALAR_ROOTS = (
    BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, CHAR, STRING,
    DECIMAL, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ, BINARY, BYTES,
)  # fmt: skip
NESTED_ROOTS = frozenset({ARRAY, MAP, ROW})
ROOTS = (*SCALAR_ROOTS, ARRAY, MAP, ROW)
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
#: Arrow field-metadata key of a column comment or a ROW field description.
COMMENT_METADATA_KEY = b"comment"
#: Longest allowed column (and ROW field) name.
MAX_COLUMN_NAME_LENGTH = 200
#: Child field names of the Arrow list and map types (pyarrow's defaults).
ARROW_LIST_ITEM = "item"
ARROW_MAP_KEY = "key"
ARROW_MAP_VALUE = "value"

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


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_PLAIN_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def validate_column_name(name: object, what: str = "column") -> str:
    """Check a column (or ROW field) name: a non-empty string, no control characters, at most 200 characters."""
    if not isinstance(name, str):
        raise FlussError(f"{what} name {name!r} is not a string", ErrorCode.INVALID_TABLE_EXCEPTION)
    if not name or not name.strip():
        raise FlussError(f"{what} name must not be empty", ErrorCode.INVALID_TABLE_EXCEPTION)
    if _CONTROL_CHARS.search(name):
        raise FlussError(f"{what} name {name!r} contains control characters", ErrorCode.INVALID_TABLE_EXCEPTION)
    if len(name) > MAX_COLUMN_NAME_LENGTH:
        raise FlussError(
            f"{what} name '{name[:40]}...' is {len(name)} characters long (max {MAX_COLUMN_NAME_LENGTH})",
            ErrorCode.INVALID_TABLE_EXCEPTION,
        )
    return name


def quote_field_name(name: str) -> str:
    """A ROW field name as the canonical text writes it: bare when a plain identifier, else in backticks."""
    return name if _PLAIN_IDENTIFIER.match(name) else "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class DataField:
    """A field of a ROW type: name, type and optional description."""

    name: str
    data_type: DataType
    description: str | None = None

    def __post_init__(self) -> None:
        validate_column_name(self.name, "ROW field")
        if isinstance(self.data_type, str):
            from fluss.type_parser import parse_type

            object.__setattr__(self, "data_type", parse_type(self.data_type))
        if not isinstance(self.data_type, DataType):
            raise FlussError(
                f"ROW field '{self.name}': {self.data_type!r} is not a DataType", ErrorCode.INVALID_TABLE_EXCEPTION
            )
        if self.description is not None and not isinstance(self.description, str):
            raise FlussError(f"ROW field '{self.name}': description must be a string",
                             ErrorCode.INVALID_TABLE_EXCEPTION)

    def __str__(self) -> str:
        text = f"{quote_field_name(self.name)} {self.data_type}"
        if self.description is not None:
            text += " '" + self.description.replace("'", "''") + "'"
        return text


@dataclass(frozen=True)
class DataType:
    """A Fluss type. Parameters not used by the root stay None; missing ones get Fluss's defaults
    (CHAR/BINARY length 1, DECIMAL(10, 0), TIME(0), TIMESTAMP(6), TIMESTAMP_LTZ(6)). Nested types carry
    their children: ``element_type`` (ARRAY), ``key_type`` and ``value_type`` (MAP, key made NOT NULL),
    ``fields`` (ROW, a tuple of :class:`DataField` with distinct names)."""

    root: str
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    element_type: DataType | None = None
    key_type: DataType | None = None
    value_type: DataType | None = None
    fields: tuple[DataField, ...] | None = None

    def __post_init__(self) -> None:
        root = self.root
        if root not in ROOTS:
            raise _invalid_type(str(root), f"unknown type root (supported: {', '.join(ROOTS)})")
        if root in NESTED_ROOTS:
            self._check_nested()
        elif any(c is not None for c in (self.element_type, self.key_type, self.value_type, self.fields)):
            raise _invalid_type(root, "a scalar type has no element, key, value or field types")
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

    def _check_nested(self) -> None:
        root = self.root
        if self.length is not None or self.precision is not None or self.scale is not None:
            raise _invalid_type(root, "takes no length, precision or scale")
        children = {"element_type": self.element_type, "key_type": self.key_type, "value_type": self.value_type}
        wanted = {ARRAY: ("element_type",), MAP: ("key_type", "value_type"), ROW: ()}[root]
        for name, child in children.items():
            if name in wanted:
                if not isinstance(child, DataType):
                    raise _invalid_type(root, f"needs a {name.replace('_', ' ')} (a DataType), got {child!r}")
            elif child is not None:
                raise _invalid_type(root, f"takes no {name.replace('_', ' ')}")
        if root == MAP and self.key_type.nullable:
            object.__setattr__(self, "key_type", self.key_type.with_nullable(False))
        if root != ROW:
            if self.fields is not None:
                raise _invalid_type(root, "takes no fields")
            return
        fields = self.fields
        if fields is None or isinstance(fields, str | bytes) or not isinstance(fields, Iterable):
            raise _invalid_type(ROW, "needs a sequence of DataField")
        fields = tuple(fields)
        if not fields:
            raise _invalid_type("ROW<>", "a ROW needs at least one field")
        seen: set[str] = set()
        for f in fields:
            if not isinstance(f, DataField):
                raise _invalid_type(ROW, f"{f!r} is not a DataField")
            if f.name in seen:
                raise _invalid_type(f"ROW<{', '.join(str(x) for x in fields)}>", f"duplicate field name '{f.name}'")
            seen.add(f.name)
        object.__setattr__(self, "fields", fields)

    # ------------------------------------------------------------------ structure
    @property
    def is_nested(self) -> bool:
        return self.root in NESTED_ROOTS

    @property
    def children(self) -> list[DataType]:
        """The direct child types of a nested type (element; key, value; field types), [] for a scalar."""
        if self.root == ARRAY:
            return [self.element_type]  # type: ignore[list-item]
        if self.root == MAP:
            return [self.key_type, self.value_type]  # type: ignore[list-item]
        if self.root == ROW:
            return [f.data_type for f in self.fields]  # type: ignore[union-attr]
        return []

    def field_names(self) -> list[str]:
        """The field names of a ROW type."""
        if self.root != ROW:
            raise ValueError(f"{self} is not a ROW type")
        return [f.name for f in self.fields]  # type: ignore[union-attr]

    def contains(self, roots: Iterable[str]) -> bool:
        """Whether this type or any type nested in it has one of ``roots``."""
        wanted = set(roots)
        return self.root in wanted or any(c.contains(wanted) for c in self.children)

    # ------------------------------------------------------------------ text form
    def type_text(self) -> str:
        """The canonical text without the nullability suffix, e.g. ``DECIMAL(10, 2)``, ``ARRAY<INT>``."""
        root = self.root
        if root in (CHAR, BINARY):
            return f"{root}({self.length})"
        if root == DECIMAL:
            return f"DECIMAL({self.precision}, {self.scale})"
        if root in TEMPORAL_PRECISION_ROOTS:
            return f"{root}({self.precision})"
        if root == ARRAY:
            return f"ARRAY<{self.element_type}>"
        if root == MAP:
            return f"MAP<{self.key_type}, {self.value_type}>"
        if root == ROW:
            return "ROW<" + ", ".join(str(f) for f in self.fields) + ">"  # type: ignore[union-attr]
        return root

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
        return all(c.arrow_type_is_exact for c in self.children)

    def to_arrow(self) -> pa.DataType:
        root = self.root
        fixed = _FIXED_ARROW.get(root)
        if fixed is not None:
            return fixed
        if root == DECIMAL:
            return pa.decimal128(self.precision, self.scale)
        if root == BINARY:
            return pa.binary(self.length)
        if root == ARRAY:
            element = self.element_type
            return pa.list_(pa.field(ARROW_LIST_ITEM, element.to_arrow(), nullable=element.nullable))
        if root == MAP:
            value = self.value_type
            return pa.map_(
                pa.field(ARROW_MAP_KEY, self.key_type.to_arrow(), nullable=False),
                pa.field(ARROW_MAP_VALUE, value.to_arrow(), nullable=value.nullable),
            )
        if root == ROW:
            return pa.struct([
                pa.field(f.name, f.data_type.to_arrow(), nullable=f.data_type.nullable,
                         metadata=None if f.description is None else {COMMENT_METADATA_KEY: f.description.encode()})
                for f in self.fields
            ])
        unit = time_unit_of(self.precision)  # type: ignore[arg-type]
        if root == TIME:
            return pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit)
        if root == TIMESTAMP:
            return pa.timestamp(unit)
        return pa.timestamp(unit, tz="UTC")  # TIMESTAMP_LTZ

    def to_arrow_field(self, name: str) -> pa.Field:
        metadata = None if self.arrow_type_is_exact else {FLUSS_TYPE_METADATA_KEY: self.type_text().encode()}
        return pa.field(name, self.to_arrow(), nullable=self.nullable, metadata=metadata)


def display_type_text(t: DataType) -> str:
    """The type as the official Python client's ``Schema.get_column_types()`` shows it: lower case, TIME and
    TIMESTAMP(_LTZ) without their default precision, ``decimal(p,s)``, ``map<k,v>``, ``row<name: type, ...>``,
    and `` NOT NULL`` after a non-nullable type at any depth."""
    root = t.root
    if root == TIME:
        text = "time" if t.precision == 0 else f"time({t.precision})"
    elif root in (TIMESTAMP, TIMESTAMP_LTZ):
        name = root.lower()
        text = name if t.precision == DEFAULT_TIMESTAMP_PRECISION else f"{name}({t.precision})"
    elif root in (CHAR, BINARY):
        text = f"{root.lower()}({t.length})"
    elif root == DECIMAL:
        text = f"decimal({t.precision},{t.scale})"
    elif root == ARRAY:
        text = f"array<{display_type_text(t.element_type)}>"  # type: ignore[arg-type]
    elif root == MAP:
        text = f"map<{display_type_text(t.key_type)},{display_type_text(t.value_type)}>"  # type: ignore[arg-type]
    elif root == ROW:
        text = "row<" + ", ".join(f"{f.name}: {display_type_text(f.data_type)}" for f in t.fields) + ">"  # type: ignore[union-attr]
    else:
        text = root.lower()
    return text if t.nullable else f"{text} NOT NULL"


class DataTypes:
    """Factories mirroring Fluss's Java ``DataTypes`` (``DataTypes.DECIMAL(10, 2)``,
    ``DataTypes.ARRAY(DataTypes.INT())``, ``DataTypes.ROW(DataTypes.FIELD("a", DataTypes.INT()))``)."""

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

    @staticmethod
    def ARRAY(element: DataType) -> DataType:  # noqa: N802
        return DataType(ARRAY, element_type=element)

    @staticmethod
    def MAP(key: DataType, value: DataType) -> DataType:  # noqa: N802
        return DataType(MAP, key_type=key, value_type=value)

    @staticmethod
    def FIELD(name: str, data_type: DataType, description: str | None = None) -> DataField:  # noqa: N802
        return DataField(name, data_type, description)

    @staticmethod
    def ROW(*fields: DataField) -> DataType:  # noqa: N802
        if len(fields) == 1 and not isinstance(fields[0], DataField) and isinstance(fields[0], Iterable):
            fields = tuple(fields[0])
        return DataType(ROW, fields=tuple(fields))


# ------------------------------------------------------------------------------------------- from arrow


def from_arrow(t: pa.DataType, nullable: bool = True) -> DataType:
    """The Fluss type for an Arrow type (see the module docstring for the mapping).

    Unsigned integers widen losslessly (uint8 -> SMALLINT, uint16 -> INT, uint32 -> BIGINT); a dictionary
    type maps as its value type; any time zone on a timestamp means TIMESTAMP_LTZ; list and large_list are
    ARRAY, map is MAP, struct is ROW, with the nullability of every child field kept (a child's ``fluss.type``
    metadata wins over its Arrow type, as for a column).

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
    if types.is_list(t) or types.is_large_list(t):
        return DataType(ARRAY, nullable, element_type=_field_type(t.value_field, "element"))
    if types.is_map(t):
        key = _field_type(t.key_field, "map key")
        return DataType(MAP, nullable, key_type=key, value_type=_field_type(t.item_field, "map value"))
    if types.is_struct(t):
        fields = [DataField(f.name, _field_type(f, f"field '{f.name}'"), _field_comment(f)) for f in t]
        return DataType(ROW, nullable, fields=tuple(fields))
    if types.is_null(t):
        raise FlussError(
            "Arrow type 'null' has no Fluss type (declare the column type explicitly)",
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


def _same_shape(a: DataType, b: DataType) -> bool:
    """Whether two types have the same family at every level (ROW fields by position)."""
    if _family(a) != _family(b):
        return False
    ca, cb = a.children, b.children
    return len(ca) == len(cb) and all(_same_shape(x, y) for x, y in zip(ca, cb, strict=True))


# ---------------------------------------------------------------------------------------------- schema


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


def key_type_error(kind: str, column: str, data_type: DataType, code: int = ErrorCode.INVALID_TABLE_EXCEPTION
                   ) -> FlussError | None:
    """The error for a ``kind`` (primary / bucket / partition key) column of a nested type, else None."""
    if not data_type.is_nested:
        return None
    return FlussError(
        f"{kind} column '{column}' has type {data_type}: ARRAY, MAP and ROW columns cannot be {kind} columns",
        code,
    )


@dataclass
class RowSchema:
    """The columns of a table (in order) and its primary-key column names (empty for a log table).

    Primary-key columns are made NOT NULL on construction; a primary-key column of a nested type (ARRAY, MAP,
    ROW) is refused, as in Fluss.
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
            error = key_type_error("primary key", pk, col.data_type)
            if error is not None:
                raise error
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
        """Build a schema from an Arrow schema (field nullability at every level, ``fluss.type`` metadata wins
        over the Arrow type; ``comment`` metadata becomes the column comment or ROW field description).

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
    if f.metadata and COMMENT_METADATA_KEY in f.metadata:
        return f.metadata[COMMENT_METADATA_KEY].decode()
    return None


def _field_type(f: pa.Field, what: str | None = None) -> DataType:
    """The Fluss type of an Arrow field (``fluss.type`` metadata wins over the Arrow type); errors name
    ``what`` (default: ``column '<name>'``)."""
    what = what or f"column '{f.name}'"
    meta = f.metadata.get(FLUSS_TYPE_METADATA_KEY) if f.metadata else None
    try:
        arrow_derived = from_arrow(f.type, f.nullable)
    except FlussError as e:
        if meta is None:
            raise FlussError(f"{what}: {e.message}", e.error_code) from None
        arrow_derived = None
    if meta is None:
        return arrow_derived  # type: ignore[return-value]
    try:
        declared = parse_type(meta.decode())
    except FlussError as e:
        raise FlussError(f"{what}: {e.message}", e.error_code) from None
    if arrow_derived is not None and not _same_shape(arrow_derived, declared):
        raise FlussError(
            f"{what}: fluss.type metadata '{declared}' does not fit Arrow type '{f.type}'",
            ErrorCode.INVALID_TABLE_EXCEPTION,
        )
    return declared.with_nullable(declared.nullable and f.nullable)


def type_of_field(f: pa.Field) -> DataType:
    """The Fluss type of an Arrow field (metadata ``fluss.type`` wins over the Arrow type)."""
    return _field_type(f)


def types_of_schema(schema: pa.Schema) -> list[DataType]:
    return [_field_type(f) for f in schema]


from fluss.type_parser import parse_type  # noqa: E402  (the parser builds the types defined above)

__all__ = [
    "ARRAY", "BIGINT", "BINARY", "BOOLEAN", "BYTES", "CHAR", "DATE", "DECIMAL", "DOUBLE", "FLOAT", "INT", "MAP",
    "ROW", "SMALLINT", "STRING", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "TINYINT",
    "Column", "DataField", "DataType", "DataTypes", "RowSchema", "FLUSS_TYPE_METADATA_KEY", "display_type_text",
    "from_arrow", "key_type_error", "parse_type", "time_unit_of", "type_of_field", "types_of_schema",
    "validate_column_name",
]  # fmt: skip
