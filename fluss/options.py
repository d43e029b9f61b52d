"""Declared options: one typed declaration per configuration key, and registries that check keys and values.

An :class:`Option` says everything there is to know about one key: its type, default, allowed values, bounds,
whether a live table may change it (``alterable``), whether a running cluster may change a server option
(``dynamic``: ``admin.alter_cluster_configs``, see ``fluss.server.dynamic_config``), a one-line description, and whether this project implements it
yet (``implemented``; an unimplemented key names what will bring it in ``planned``). A key may be a *pattern*:
``<name>`` stands for one dot-free segment (``fields.<column>.agg``) and a trailing ``*`` for any rest
(``table.datalake.paimon.*``).

An :class:`OptionRegistry` is a set of options under one or more prefixes (``table.``). It answers three questions
with errors that name the key: is this key known (else: the closest known key, by edit distance), is it supported
here (else: "not supported yet"), and is this value valid for it (:meth:`Option.parse`, which returns the typed
value: ``int`` for INT/LONG, milliseconds for DURATION, bytes for MEMORY_SIZE, ``bool``, the canonical spelling of an
ENUM value). Every failure is a ``FlussError`` with ``INVALID_CONFIG_EXCEPTION``.

The table options (``fluss.table_options``) and the server options (``fluss.server.config``) are the two registries;
``to_json`` exports a registry for the Java connector and the docs.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fluss.config_values import parse_bool, parse_duration_ms, parse_int, parse_memory_size
from fluss.errors import ErrorCode, FlussError


class OptionType(StrEnum):
    """Value types, named as Fluss's documentation names them."""

    STRING = "String"
    INT = "Integer"
    LONG = "Long"
    DOUBLE = "Double"
    BOOLEAN = "Boolean"
    DURATION = "Duration"
    MEMORY_SIZE = "MemorySize"
    ENUM = "Enum"
    LIST = "List"


def config_error(message: str) -> FlussError:
    return FlussError(message, ErrorCode.INVALID_CONFIG_EXCEPTION)


@dataclass(frozen=True)
class Option:
    """One configuration key (see the module docstring)."""

    key: str
    type: OptionType
    default: str | None
    description: str
    values: tuple[str, ...] = ()  # ENUM: every documented value
    supported_values: tuple[str, ...] | None = None  # ENUM: the values implemented here (None: all of ``values``)
    min: int | None = None  # INT/LONG: smallest value; DURATION: in ms; MEMORY_SIZE: in bytes
    max: int | None = None
    alterable: bool = False  # may be changed on a live table (ALTER TABLE ... SET)
    dynamic: bool = False  # a server option the running cluster may change (admin.alter_cluster_configs)
    implemented: bool = True
    planned: str = ""  # for an unimplemented key: what will implement it
    case_sensitive: bool = False  # ENUM values compared exactly (merge-engine names) or case-insensitively
    forever: tuple[str, ...] = ()  # DURATION: spellings meaning "no limit" (parsed as -1)

    @property
    def is_pattern(self) -> bool:
        return "<" in self.key or self.key.endswith("*")

    def matches(self, key: str) -> bool:
        if not self.is_pattern:
            return key == self.key
        return _pattern(self.key).fullmatch(key) is not None

    def parse(self, raw: object, where: str = "") -> Any:
        """The typed value of ``raw`` for this key; raises naming the key (and ``where``) when it is invalid."""
        suffix = f" of {where}" if where else ""
        text = str(raw).strip()
        if self.type == OptionType.ENUM:
            return self._parse_enum(text, suffix)
        try:
            value = self._parse_scalar(raw, text)
        except FlussError as e:
            raise config_error(f"{e.message}{suffix}") from None
        if isinstance(value, int) and not isinstance(value, bool) and not (value == -1 and self.forever
                                                                            and text.lower() in self.forever):
            self._check_range(value, text, suffix)
        return value

    def _parse_scalar(self, raw: object, text: str) -> Any:
        key = f"'{self.key}'"
        if self.type == OptionType.BOOLEAN:
            return parse_bool(text, self.key)
        if self.type in (OptionType.INT, OptionType.LONG):
            return parse_int(text, self.key)
        if self.type == OptionType.DOUBLE:
            try:
                return float(text)
            except ValueError:
                raise config_error(f"Invalid number {raw!r} for {key}") from None
        if self.type == OptionType.DURATION:
            if text.lower() in self.forever:
                return -1
            ms = parse_duration_ms(text, self.key)
            return -1 if ms == 0 and self.forever else ms
        if self.type == OptionType.MEMORY_SIZE:
            return parse_memory_size(text, self.key)
        return str(raw)

    def _check_range(self, value: int, text: str, suffix: str) -> None:
        unit = {OptionType.DURATION: " ms", OptionType.MEMORY_SIZE: " bytes"}.get(self.type, "")
        if self.min is not None and value < self.min:
            limit = f"at least {self.min}{unit}" if self.max is None else f"between {self.min} and {self.max}{unit}"
            raise config_error(f"Invalid value '{text}' for '{self.key}'{suffix}: must be {limit}")
        if self.max is not None and value > self.max:
            limit = f"at most {self.max}{unit}" if self.min is None else f"between {self.min} and {self.max}{unit}"
            raise config_error(f"Invalid value '{text}' for '{self.key}'{suffix}: must be {limit}")

    def _parse_enum(self, text: str, suffix: str) -> str:
        canonical = {(v if self.case_sensitive else v.upper()): v for v in self.values}
        found = canonical.get(text if self.case_sensitive else text.upper())
        if found is None:
            raise config_error(f"Invalid value '{text}' for '{self.key}'{suffix} (allowed: {', '.join(self.values)})")
        if self.supported_values is not None and found not in self.supported_values:
            raise config_error(f"Value '{found}' of '{self.key}'{suffix} is not supported yet "
                               f"(supported: {', '.join(self.supported_values)})")
        return found

    def value_of(self, properties: Mapping[str, str], where: str = "") -> Any:
        """The typed value this key has in ``properties`` (its default when absent; None without a default)."""
        raw = properties.get(self.key)
        if raw is None:
            raw = self.default
        return None if raw is None else self.parse(raw, where)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "type": self.type.value, "default": self.default,
                               "description": self.description, "alterable": self.alterable,
                               "implemented": self.implemented}
        if self.values:
            out["values"] = list(self.values)
            out["supported_values"] = list(self.supported_values if self.supported_values is not None
                                           else self.values)
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        if self.planned:
            out["planned"] = self.planned
        if self.dynamic:
            out["dynamic"] = True
        return out


_PATTERNS: dict[str, re.Pattern] = {}


def _pattern(key: str) -> re.Pattern:
    compiled = _PATTERNS.get(key)
    if compiled is None:
        text = re.escape(key)
        text = re.sub(r"<[^>]*>", r"[^.]+", text.replace(r"\<", "<").replace(r"\>", ">"))
        if text.endswith(r"\*"):
            text = text[:-2] + ".+"
        compiled = _PATTERNS[key] = re.compile(text)
    return compiled


@dataclass
class OptionRegistry:
    """The options of one scope (``what``: "table option", "server option") under ``prefixes``."""

    what: str
    options: list[Option]
    prefixes: tuple[str, ...] = ()
    _by_key: dict[str, Option] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {o.key: o for o in self.options if not o.is_pattern}
        self._patterns = [o for o in self.options if o.is_pattern]
        if len(self._by_key) + len(self._patterns) != len(self.options):
            raise ValueError(f"duplicate keys in the {self.what} registry")

    def __iter__(self):
        return iter(self.options)

    def get(self, key: str) -> Option | None:
        option = self._by_key.get(key)
        if option is None:
            option = next((o for o in self._patterns if o.matches(key)), None)
        return option

    def owns(self, key: str) -> bool:
        """Whether ``key`` is in this registry's namespace (one of its prefixes, or a declared key)."""
        return key.startswith(self.prefixes) or self.get(key) is not None

    def closest(self, key: str) -> str | None:
        candidates = list(self._by_key) + [o.key for o in self._patterns]
        found = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
        return found[0] if found else None

    def unknown_key_message(self, key: str, where: str = "") -> str:
        suffix = f" of {where}" if where else ""
        hint = self.closest(key)
        did_you_mean = f"; did you mean '{hint}'?" if hint else ""
        return f"Unknown {self.what} '{key}'{suffix}{did_you_mean}"

    def resolve(self, key: str, where: str = "") -> Option:
        """The option of ``key``; raises for an unknown key (naming the closest one) or an unimplemented one."""
        option = self.get(key)
        if option is None:
            raise config_error(self.unknown_key_message(key, where))
        if not option.implemented:
            suffix = f" of {where}" if where else ""
            raise config_error(f"The {self.what} '{key}'{suffix} is not supported yet by this Fluss implementation; "
                               "remove it (it would be stored but have no effect)")
        return option

    def parse_all(self, values: Mapping[str, object], where: str = "",
                  keys: Iterable[str] | None = None) -> dict[str, Any]:
        """Resolves and parses every key of ``values`` in this registry's namespace (or only ``keys``)."""
        out = {}
        for key in keys if keys is not None else values:
            if not self.owns(key):
                continue
            out[key] = self.resolve(key, where).parse(values[key], where)
        return out

    def to_json(self) -> list[dict[str, Any]]:
        return [o.to_json() for o in sorted(self.options, key=lambda o: o.key)]
