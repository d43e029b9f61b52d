"""Smoke of the lake tiering benchmark: both sides (tiering and the raw pypaimon limit) produce a figure.

The raw side writes into a Paimon table created with the lake's schema, so it has to carry the lake system
columns as tiering does; without them pypaimon refuses the batches and ``make bench`` reports the scenario failed.
"""

from __future__ import annotations

import dataclasses

import pytest

import fluss
from bench import lake_tiering, model
from bench.fluss_log import server_pids
from fluss.lake.paimon import BUCKET_COLUMN, OFFSET_COLUMN, TIMESTAMP_COLUMN, lake_of_table

ROWS = 20_000


@pytest.mark.asyncio(loop_scope="session")
async def test_tiering_benchmark_measures_tiering_and_the_raw_paimon_write(lake_cluster, lake_conn):
    profile = dataclasses.replace(model.QUICK, tiering_rows=ROWS, heavy_rounds=1)
    fluss_side, raw_side = await lake_tiering.measure_throughput(lake_conn, profile, server_pids(lake_cluster))

    for m in (fluss_side, raw_side):
        assert m.status == model.OK, m.note
        assert len(m.rounds) == 1 and m.rounds[0] > 0, m.rounds

    info = await lake_conn.get_admin().get_table_info(fluss.TablePath("bench", "tier_1"))
    lake = lake_of_table(info)
    raw = lake.catalog.get_table("bench.raw_1")
    builder = raw.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert rows.num_rows == ROWS
    per_bucket = rows.group_by(BUCKET_COLUMN).aggregate([(OFFSET_COLUMN, "min"), (OFFSET_COLUMN, "max"),
                                                         (OFFSET_COLUMN, "count")])
    for bucket, low, high, count in zip(*(per_bucket.column(c).to_pylist() for c in (
            BUCKET_COLUMN, f"{OFFSET_COLUMN}_min", f"{OFFSET_COLUMN}_max", f"{OFFSET_COLUMN}_count")), strict=True):
        assert 0 <= bucket < lake_tiering.BUCKETS
        assert (low, high) == (0, count - 1), f"bucket {bucket}: offsets {low}..{high} for {count} rows"
    assert rows.column(TIMESTAMP_COLUMN).null_count == 0
