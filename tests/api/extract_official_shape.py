"""Writes ``official_api_shape.json``: the shape of the official Python client's API (class and function names,
parameters with their kinds and defaults, sync/async, properties, static methods) read from its type stub
(apache/fluss-rust ``bindings/python/fluss/__init__.pyi``). The stub itself is not part of this repository;
run this against a checkout of it when the official API changes::

    python -m tests.api.extract_official_shape path/to/__init__.pyi [git-commit-of-the-stub]
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

OUT = Path(__file__).with_name("official_api_shape.json")


def _default(node: ast.expr | None) -> object:
    if node is None:
        return "<required>"
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[list]:
    args = fn.args
    out = []
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for i, (a, d) in enumerate(zip(positional, defaults, strict=True)):
        kind = "positional_only" if i < len(args.posonlyargs) else "positional_or_keyword"
        out.append([a.arg, kind, _default(d)])
    if args.vararg:
        out.append([args.vararg.arg, "var_positional", "<required>"])
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append([a.arg, "keyword_only", _default(d)])
    if args.kwarg:
        out.append([args.kwarg.arg, "var_keyword", "<required>"])
    return out


def _member(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict:
    decorators = {ast.unparse(d) for d in fn.decorator_list}
    kind = "property" if "property" in decorators else "staticmethod" if "staticmethod" in decorators else \
        "classmethod" if "classmethod" in decorators else "method"
    return {"kind": kind, "async": isinstance(fn, ast.AsyncFunctionDef), "params": _params(fn),
            "returns": ast.unparse(fn.returns) if fn.returns is not None else None}


def extract(stub_text: str) -> dict:
    tree = ast.parse(stub_text)
    classes: dict[str, dict] = {}
    constants: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members: dict[str, dict] = {}
            attributes: list[str] = []
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    decorators = {ast.unparse(d) for d in item.decorator_list}
                    if any(d.endswith(".setter") for d in decorators):
                        members[item.name]["settable"] = True
                        continue
                    if "overload" in decorators and item.name in members:
                        continue
                    members[item.name] = _member(item)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    attributes.append(item.target.id)
                elif isinstance(item, ast.Assign):
                    attributes.extend(t.id for t in item.targets if isinstance(t, ast.Name))
            classes[node.name] = {"bases": [ast.unparse(b) for b in node.bases], "members": members,
                                  "attributes": attributes}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            constants.append(node.target.id)
    return {"classes": classes, "constants": constants}


def _dump(shape: dict) -> str:
    """JSON with one line per class member (diffs of a new stub version stay readable)."""
    lines = ["{", f' "constants": {json.dumps(shape["constants"])},', f' "source": {json.dumps(shape["source"])},',
             ' "classes": {']
    classes = sorted(shape["classes"].items())
    for i, (name, c) in enumerate(classes):
        lines.append(f'  {json.dumps(name)}: {{"bases": {json.dumps(c["bases"])}, '
                     f'"attributes": {json.dumps(c["attributes"])}, "members": {{')
        members = sorted(c["members"].items())
        for j, (m, spec) in enumerate(members):
            lines.append(f'   {json.dumps(m)}: {json.dumps(spec, sort_keys=True)}' + ("," if j < len(members) - 1 else ""))
        lines.append("  }}" + ("," if i < len(classes) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    stub = Path(argv[1]).read_text()
    shape = extract(stub)
    shape["source"] = {"repository": "apache/fluss-rust", "path": "bindings/python/fluss/__init__.pyi",
                       "commit": argv[2] if len(argv) > 2 else None}
    OUT.write_text(_dump(shape))
    print(f"wrote {OUT} ({len(shape['classes'])} classes)")


if __name__ == "__main__":
    main(sys.argv)
