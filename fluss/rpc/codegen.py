"""Regenerates the Python gRPC stubs from ``fluss/rpc/proto/*.proto`` (``make proto``).

The generated modules live in ``fluss/rpc/gen``; their imports are rewritten to be package-relative so
the stubs work as ``fluss.rpc.gen.fluss_api_pb2``. ``generate(out_dir)`` is also used by the test that
checks the committed stubs still match the ``.proto`` files.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PROTO_DIR = Path(__file__).parent / "proto"
GEN_DIR = Path(__file__).parent / "gen"


def generate(out_dir: Path = GEN_DIR) -> list[Path]:
    """Runs protoc (from grpcio-tools) on every .proto file; returns the files written."""
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    protos = sorted(PROTO_DIR.glob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *map(str, protos),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed on {', '.join(p.name for p in protos)}")
    written = []
    for path in sorted(out_dir.glob("*_pb2*.py*")):
        text = path.read_text()
        fixed = re.sub(r"^import (\w+_pb2) as", r"from . import \1 as", text, flags=re.M)
        path.write_text(fixed)
        written.append(path)
    (out_dir / "__init__.py").write_text('"""Generated gRPC stubs; run `make proto` to regenerate."""\n')
    return written


if __name__ == "__main__":
    for p in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else GEN_DIR):
        print(p)
