"""The package has the official Python client's API shape (``official_api_shape.json``, extracted from its type
stub by ``extract_official_shape.py``): every class, function and constant exists under the same name; every
method has the same parameters (names, order, kinds, defaults; this client may add optional ones after them),
is a property / static method where the stub says so, and is ``async`` exactly where the stub's is."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import fluss

SHAPE = json.loads(Path(__file__).with_name("official_api_shape.json").read_text())
CLASSES = SHAPE["classes"]
MEMBERS = [(c, m) for c, spec in sorted(CLASSES.items()) for m in sorted(spec["members"])]
#: parameter kinds a call can use the same way (``/`` in the stub only forbids keywords the dunders never get)
_POSITIONAL = {"positional_only", "positional_or_keyword"}
_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional_only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional_or_keyword",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword_only",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def _attribute(cls: type, name: str):
    for klass in cls.__mro__:
        if klass is object:
            break
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _ours(params: list[inspect.Parameter]) -> list[list]:
    return [[p.name, _KINDS[p.kind], "<required>" if p.default is inspect.Parameter.empty else p.default]
            for p in params]


def _check_params(where: str, ours: list[list], theirs: list[list]) -> None:
    assert [p[0] for p in ours[:len(theirs)]] == [p[0] for p in theirs], f"{where}: parameters {ours} vs {theirs}"
    for (name, kind, default), (_, their_kind, their_default) in zip(ours, theirs, strict=False):
        same_kind = kind == their_kind or (kind in _POSITIONAL and their_kind in _POSITIONAL)
        assert same_kind, f"{where}: parameter {name} is {kind}, official {their_kind}"
        assert default == their_default, f"{where}: parameter {name} defaults to {default!r}, official {their_default!r}"
    extra = ours[len(theirs):]
    assert all(p[2] != "<required>" or p[1] in ("var_positional", "var_keyword") for p in extra), \
        f"{where}: additional parameters must be optional: {extra}"


def test_every_official_class_and_constant_is_exported():
    missing = [c for c in CLASSES if not isinstance(getattr(fluss, c, None), type)]
    assert missing == []
    assert [c for c in SHAPE["constants"] if not hasattr(fluss, c)] == []
    assert fluss.EARLIEST_OFFSET == -2
    for name, spec in CLASSES.items():  # enums and exceptions keep the stub's base classes
        for base in spec["bases"]:
            if base in ("IntEnum", "Exception"):
                assert issubclass(getattr(fluss, name), {"IntEnum": int, "Exception": Exception}[base]), name


def test_every_official_attribute_exists_with_the_official_values():
    """Class attributes (ChangeType members, every ErrorCode constant) and FlussError's instance attributes."""
    for name, spec in CLASSES.items():
        cls = getattr(fluss, name)
        probe = fluss.FlussError("probe") if name == "FlussError" else cls
        assert [a for a in spec["attributes"] if not hasattr(probe, a)] == [], name
    assert [int(c) for c in fluss.ChangeType] == [0, 1, 2, 3, 4]
    assert (fluss.ErrorCode.CLIENT_ERROR, fluss.ErrorCode.NONE, fluss.ErrorCode.TABLE_NOT_EXIST,
            fluss.ErrorCode.DELETION_DISABLED_EXCEPTION) == (-2, 0, 7, 57)
    assert fluss.FlussError("x").error_code == fluss.ErrorCode.CLIENT_ERROR


@pytest.mark.parametrize(("cls_name", "member"), MEMBERS, ids=[f"{c}.{m}" for c, m in MEMBERS])
def test_member_has_the_official_shape(cls_name, member):
    spec = CLASSES[cls_name]["members"][member]
    cls = getattr(fluss, cls_name)
    where = f"{cls_name}.{member}"
    if member == "__new__":  # the constructor: the class's signature
        _check_params(where, _ours(list(inspect.signature(cls).parameters.values())), spec["params"][1:])
        return
    attr = _attribute(cls, member)
    assert attr is not None, f"{where} is missing"
    if spec["kind"] == "property":
        assert isinstance(attr, property), f"{where} must be a property, is {type(attr).__name__}"
        assert (attr.fset is not None) == bool(spec.get("settable")), f"{where}: settable must be {spec.get('settable')}"
        return
    if spec["kind"] == "staticmethod":
        assert isinstance(attr, staticmethod), f"{where} must be a static method"
    function = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
    assert callable(function), f"{where} is not callable"
    returns_awaitable = inspect.iscoroutinefunction(function) or getattr(function, "__fluss_awaitable__", False)
    assert returns_awaitable == spec["async"], f"{where}: async must be {spec['async']}"
    if spec["async"] is False:
        assert not inspect.iscoroutinefunction(function) and not inspect.isasyncgenfunction(function) or \
            member == "__aiter__", f"{where} must return its value directly, not a coroutine"
    params = list(inspect.signature(function).parameters.values())
    theirs = spec["params"]
    if spec["kind"] != "staticmethod":
        params, theirs = params[1:], theirs[1:]
    _check_params(where, _ours(params), theirs)


def test_methods_that_return_awaitables_do_so_at_runtime():
    """``Lookuper.lookup`` is ``async`` in the stub and returns an ``asyncio.Future`` here (as the official
    binding's ``future_into_py`` does): awaitable, started at the call."""
    marked = [(c, m) for c, m in MEMBERS if getattr(_attribute(getattr(fluss, c), m), "__fluss_awaitable__", False)]
    assert marked == [("Lookuper", "lookup"), ("PrefixLookuper", "lookup")]
