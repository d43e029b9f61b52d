"""Fluss's cluster configuration procedures through Flink SQL (``CALL cat.sys.set_cluster_configs /
get_cluster_configs / reset_cluster_configs``) on the shared cluster: set, shown with its source, refused with the
server's reason, reset."""

from __future__ import annotations

import pytest

from tests.flink.conftest import CATALOG

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _rows(result) -> list[tuple]:
    with result.collect() as it:
        return [tuple(r) for r in it]


async def test_set_get_and_reset_cluster_configs(batch_env, admin):
    t_env = batch_env
    try:
        assert _rows(t_env.execute_sql(
            f"CALL {CATALOG}.sys.set_cluster_configs('kv.snapshot.interval', '7min')")) == [
            ("Set 'kv.snapshot.interval' to '7min'",)]
        assert _rows(t_env.execute_sql(
            f"CALL {CATALOG}.sys.get_cluster_configs('kv.snapshot.interval')")) == [
            ("kv.snapshot.interval", "7min", "DYNAMIC_SERVER_CONFIG")]
        entries = {e.key: e for e in await admin.describe_cluster_configs()}
        assert entries["kv.snapshot.interval"].value == "7min"  # the same override the Python admin sees
        every = {r[0]: r for r in _rows(t_env.execute_sql(f"CALL {CATALOG}.sys.get_cluster_configs()"))}
        assert every["max.bucket.num"][1:] == ("64", "INITIAL_SERVER_CONFIG")
        with pytest.raises(Exception) as err:
            _rows(t_env.execute_sql(f"CALL {CATALOG}.sys.set_cluster_configs('default.bucket.number', '3')"))
        assert "default.bucket.number" in str(err.value) and "restart" in str(err.value), str(err.value)[-1500:]
    finally:
        t_env.execute_sql(f"CALL {CATALOG}.sys.reset_cluster_configs('kv.snapshot.interval')").wait()
    assert _rows(t_env.execute_sql(f"CALL {CATALOG}.sys.get_cluster_configs('kv.snapshot.interval')")) == [
        ("kv.snapshot.interval", "10min", "DEFAULT_CONFIG")]
