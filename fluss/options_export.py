"""``python -m fluss.options_export [--check]`` (``make options``): the option registries as JSON (table,
connector and server options; a server option the running cluster may change is marked ``"dynamic": true``).

The Java connector reads ``REGISTRY_JSON`` (a resource of its jar): which ``WITH (...)`` keys are table properties,
and its tests check its own option list against it. ``tests/test_table_options.py`` fails when the committed file
differs from what the registries (``fluss.table_options``) produce, as the proto stubs are checked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fluss.server.config import SERVER_OPTIONS
from fluss.table_options import CONNECTOR_OPTIONS, TABLE_OPTIONS

REGISTRY_JSON = (Path(__file__).resolve().parent.parent / "connector" / "src" / "main" / "resources" / "org" / "fluss"
                 / "py" / "flink" / "options-registry.json")


def registry_json() -> str:
    """The registries as JSON (sorted, stable); server options say which ones are ``dynamic``."""
    doc = {"table_options": TABLE_OPTIONS.to_json(), "connector_options": CONNECTOR_OPTIONS.to_json(),
           "server_options": SERVER_OPTIONS.to_json()}
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = registry_json()
    if "--check" in args:
        current = REGISTRY_JSON.read_text() if REGISTRY_JSON.exists() else ""
        if current != text:
            print(f"{REGISTRY_JSON} is out of date: run `make options`", file=sys.stderr)
            return 1
        return 0
    REGISTRY_JSON.parent.mkdir(parents=True, exist_ok=True)
    REGISTRY_JSON.write_text(text)
    print(f"wrote {REGISTRY_JSON}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
