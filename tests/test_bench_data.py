"""The benchmark's rows: stamping a send time touches only column ``ts``."""

from bench.data import SCHEMA, make_batch, with_timestamp


def test_with_timestamp_replaces_only_the_ts_column():
    template = make_batch(100, seed=7)
    stamped = with_timestamp(template, 1_700_000_000_123_456)
    assert stamped.schema == SCHEMA
    assert stamped.column("ts").to_pylist() == [1_700_000_000_123_456] * 100
    assert stamped.drop_columns(["ts"]).equals(template.drop_columns(["ts"]))
    assert template.column("ts").to_pylist() == [0] * 100  # the template is left as it was
