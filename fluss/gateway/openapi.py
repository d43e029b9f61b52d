"""The committed OpenAPI document: ``python -m fluss.gateway.openapi`` rewrites ``docs/gateway-openapi.json``
from the code; ``--check`` fails when the committed file is stale (``tests/gateway/test_openapi.py`` runs it)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "gateway-openapi.json"


def render() -> str:
    from fluss.gateway.app import create_app
    from fluss.gateway.config import GatewayConfig

    app = create_app(GatewayConfig.single("127.0.0.1:9123"))
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fluss.gateway.openapi", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the committed document is stale")
    parser.add_argument("--output", default=str(DOCUMENT))
    args = parser.parse_args(argv)
    text = render()
    path = Path(args.output)
    if args.check:
        if not path.exists() or path.read_text() != text:
            print(f"{path} is stale: run python -m fluss.gateway.openapi", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
