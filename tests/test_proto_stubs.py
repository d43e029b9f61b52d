"""The committed gRPC stubs must be exactly what `make proto` generates from the .proto files."""

from pathlib import Path

from fluss.rpc.codegen import GEN_DIR, generate


def test_committed_stubs_match_the_proto(tmp_path: Path):
    fresh = generate(tmp_path)
    assert fresh, "protoc produced nothing"
    for path in fresh:
        committed = GEN_DIR / path.name
        assert committed.exists(), f"{path.name} is not committed: run `make proto`"
        assert committed.read_text() == path.read_text(), f"{path.name} is stale: run `make proto`"
