"""Bucket-level series are bounded: a tablet server leading 1,000 buckets exports them for at most
``metrics.bucket-level.max-buckets`` replicas (the rest counted in ``bucketMetricsOmitted``), its server-level sums
still cover every bucket, and a scrape stays fast. The 1,000-bucket run is a long test (``make test-long``);
``make test`` runs the same checks with 120 buckets."""

from __future__ import annotations

import asyncio
import statistics
import time

import pyarrow as pa
import pytest

import fluss
from fluss.metrics.scrape import scrape
from fluss.server.cluster import LocalCluster


@pytest.mark.parametrize("BUCKETS, LIMIT", [
    pytest.param(120, 80, id="120-buckets"),
    pytest.param(1000, 600, id="1000-buckets", marks=pytest.mark.long),
])
async def test_many_buckets_scrape_fast_with_bounded_series(BUCKETS: int, LIMIT: int):  # noqa: N803
    config = {"max.bucket.num": str(BUCKETS), "metrics.bucket-level.max-buckets": str(LIMIT)}
    # the table's 2,000 znodes are created in one transaction: give kazoo more than the tests' 3s session
    with LocalCluster(tablet_servers=1, metrics=True, server_config=config, zookeeper_session_timeout="30s") as cluster:
        endpoint = cluster.metrics_endpoints()["tablet-server-0"]
        async with await fluss.FlussConnection.create(
                fluss.Config({"bootstrap.servers": cluster.bootstrap_servers})) as conn:
            schema = pa.schema([("id", pa.int64())])
            path = fluss.TablePath("fluss", "wide")
            await conn.get_admin().create_table(path, fluss.TableDescriptor(
                fluss.Schema(schema), bucket_count=BUCKETS, bucket_keys=["id"]))  # hashed: rows in (nearly) every bucket
            deadline = time.monotonic() + 240
            while scrape(endpoint).value("fluss_tabletserver_leaderCount") != BUCKETS:
                assert time.monotonic() < deadline, "the buckets did not all get their leader"
                await asyncio.sleep(1)
            writer = (await conn.get_table(path)).new_append().create_writer()
            writer.write_arrow_batch(pa.record_batch([pa.array(range(5000), pa.int64())], schema=schema))
            await writer.flush()
        times = []
        for _ in range(5):
            got = scrape(endpoint, timeout_s=30)
            times.append(got.seconds)
        # a guard against a pathological scrape (the figure itself is the bench's metrics.scrape.1000_buckets)
        assert statistics.median(times) < 3.0, f"scrapes took {times}"
        assert got.value("fluss_tabletserver_replicaCount") == BUCKETS
        assert got.value("fluss_tabletserver_bucketMetricsOmitted") == BUCKETS - LIMIT
        for name in ("log_numSegments", "log_startOffset", "log_endOffset", "logicalStorage_logSize"):
            assert len(list(got.series(f"fluss_tabletserver_table_bucket_{name}"))) == LIMIT, name
        assert not list(got.series("fluss_tabletserver_table_bucket_logicalStorage_kvSize"))  # a log table
        shown = {int(s.labels["bucket"]) for s in got.series("fluss_tabletserver_table_bucket_log_endOffset")}
        assert shown == set(range(LIMIT))  # the first buckets, the same set every scrape
        assert got.value("fluss_tabletserver_logicalStorage_logSize") >= \
            got.total("fluss_tabletserver_table_bucket_logicalStorage_logSize") > 0
