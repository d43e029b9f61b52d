"""The cost of metrics on the hot paths, and the scrape of a tablet server holding 1,000 buckets.

Two 3-tablet-server clusters run side by side in the same run: ``off`` (no reporter, ``client.metrics.enabled``
false) and ``on`` (``metrics.reporters: prometheus`` on every server, client metrics on, and a scraper reading every
server's ``/metrics`` once a second while its rounds run, as a Prometheus would). Rounds alternate between them, so
both see the same machine:

- ``metrics.append.off`` / ``.on``: ``write_arrow_batch`` of a round's rows + ``flush()`` (RF=1, acks=all); rows/s.
- ``metrics.lookup.off`` / ``.on``: batched ``Lookuper.lookup`` (1,000 concurrent) of existing keys; rows/s.
- ``metrics.append.ratio`` / ``metrics.lookup.ratio``: on / off of each pair of rounds.
- ``metrics.hotpath.ns``: what the data path adds per written bucket entry (``TableMetrics.written``: two table
  and two server counters), in ns, timed over a million calls. The servers' counters cannot be switched off (they
  are what the ``off`` cluster still pays); this is their whole cost.
- ``metrics.scrape.1000_buckets``: a 1-tablet-server cluster hosting one 1,000-bucket table (with data in every
  bucket): the time of a ``GET /metrics`` (median of ``SCRAPES``), with the number of series and bytes in the note.
"""

from __future__ import annotations

import asyncio
import threading
import time
import timeit

import numpy as np

import fluss
from bench.data import SCHEMA, make_batch
from bench.model import FAILED, Measurement, Profile
from fluss.metrics.scrape import fetch_text, parse

BUCKETS = 3
LOOKUP_CONCURRENCY = 1_000
SCRAPE_BUCKETS = 1_000
SCRAPES = 10
PAIRS_PER_ROUND = 3  # pairs of (off, on) rounds per profile round: the figures are medians of many short rounds


class Scraper:
    """Reads every endpoint once a second while ``active`` (a stand-in for Prometheus)."""

    def __init__(self, endpoints: list[str]) -> None:
        self.endpoints = endpoints
        self.active = threading.Event()
        self._stop = threading.Event()
        self.scrapes = 0
        self._thread = threading.Thread(target=self._run, name="bench-scraper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            if not self.active.is_set():
                continue
            for endpoint in self.endpoints:
                try:
                    fetch_text(endpoint, 5)
                    self.scrapes += 1
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


async def _setup(bootstrap: str, client_metrics: bool, kv_rows: int) -> tuple:
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap,
                                                            "client.metrics.enabled": str(client_metrics).lower()}))
    admin = conn.get_admin()
    await admin.create_database("bench", ignore_if_exists=True)
    log_path, kv_path = fluss.TablePath("bench", "metrics_log"), fluss.TablePath("bench", "metrics_kv")
    props = {"table.replication.factor": "1"}
    await admin.create_table(log_path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS,
                                                             properties=props), ignore_if_exists=True)
    await admin.create_table(kv_path, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["seq"]),
                                                            bucket_count=BUCKETS, properties=props),
                             ignore_if_exists=True)
    upsert = (await conn.get_table(kv_path)).new_upsert().create_writer()
    for start in range(0, kv_rows, 10_000):
        upsert.upsert_arrow_batch(make_batch(min(10_000, kv_rows - start), seed=start, start_seq=start))
    await upsert.flush()
    writer = (await conn.get_table(log_path)).new_append().create_writer()
    lookuper = (await conn.get_table(kv_path)).new_lookup().create_lookuper()
    return conn, writer, lookuper


async def _append_round(writer, batch) -> float:
    t0 = time.perf_counter()
    writer.write_arrow_batch(batch)
    await writer.flush()
    return batch.num_rows / (time.perf_counter() - t0)


async def _lookup_round(lookuper, keys: list[int]) -> float:
    t0 = time.perf_counter()
    found = 0
    for start in range(0, len(keys), LOOKUP_CONCURRENCY):
        got = await asyncio.gather(*(lookuper.lookup({"seq": k}) for k in keys[start:start + LOOKUP_CONCURRENCY]))
        found += sum(g is not None for g in got)
    if found != len(keys):
        raise RuntimeError(f"lookups found {found} of {len(keys)} keys")
    return len(keys) / (time.perf_counter() - t0)


def hotpath_ns() -> float:
    """ns per ``TableMetrics.written`` (the per-bucket-entry cost the servers pay, metrics reported or not)."""
    from fluss.metadata import Schema, TableDescriptor, TableInfo, TablePath
    from fluss.server.metrics.tablet import TabletServerMetrics
    from fluss.types import RowSchema

    info = TableInfo(TablePath("bench", "t"), 1, 1, TableDescriptor(Schema.of(RowSchema.from_arrow(SCHEMA))), 0, 0)
    metrics = TabletServerMetrics()
    table = metrics.table(info)
    n = 1_000_000
    seconds = min(timeit.repeat(lambda: table.written(1000, 65536), number=n, repeat=3))
    metrics.registry.close()
    return seconds / n * 1e9


async def _scrape_1000_buckets() -> Measurement:
    from fluss.server.cluster import LocalCluster

    m = Measurement("fluss", "metrics.scrape.1000_buckets", "ms", better="lower")
    config = {"max.bucket.num": str(SCRAPE_BUCKETS)}
    # a 1,000-bucket table is created in one ZooKeeper transaction, which can take longer than the default test
    # session timeout's read deadline (3s) on a busy machine: kazoo would drop the connection
    with LocalCluster(tablet_servers=1, metrics=True, server_config=config, zookeeper_session_timeout="30s") as cluster:
        endpoint = next(e for name, e in cluster.metrics_endpoints().items() if name.startswith("tablet-server"))
        async with await fluss.FlussConnection.create(
                fluss.Config({"bootstrap.servers": cluster.bootstrap_servers})) as conn:
            path = fluss.TablePath("fluss", "wide")
            await conn.get_admin().create_table(path, fluss.TableDescriptor(
                fluss.Schema(SCHEMA), bucket_count=SCRAPE_BUCKETS, bucket_keys=["seq"],  # rows in every bucket
                properties={"table.replication.factor": "1"}))
            deadline = time.monotonic() + 300
            while parse(fetch_text(endpoint)).value("fluss_tabletserver_leaderCount", 0) < SCRAPE_BUCKETS:
                if time.monotonic() > deadline:
                    raise RuntimeError("the 1,000 buckets did not all get a leader in 300s")
                await asyncio.sleep(1)
            writer = (await conn.get_table(path)).new_append().create_writer()
            batch = make_batch(SCRAPE_BUCKETS * 10)
            writer.write_arrow_batch(batch)
            await writer.flush()
        times, text = [], ""
        for _ in range(SCRAPES):
            t0 = time.perf_counter()
            text = fetch_text(endpoint, 30)
            times.append((time.perf_counter() - t0) * 1000)
        scraped = parse(text)
        bucket_series = sum(1 for s in scraped.samples if "_table_bucket_" in s.name)
        m.rounds = times
        m.note = (f"GET /metrics of 1 tablet server leading {SCRAPE_BUCKETS} buckets: {len(scraped.samples)} series "
                  f"({bucket_series} bucket-level), {len(text) / 1024:.0f} KiB; median of {SCRAPES}")
    return m


async def _run(profile: Profile) -> list[Measurement]:
    from fluss.server.cluster import LocalCluster

    out: list[Measurement] = []
    kv_rows = profile.kv_rows // 4
    lookups = profile.kv_rows // 40
    rows = profile.rows_per_round // 2
    append = {k: Measurement("fluss", f"metrics.append.{k}", "rows/s") for k in ("off", "on")}
    lookup = {k: Measurement("fluss", f"metrics.lookup.{k}", "rows/s") for k in ("off", "on")}
    ratios = {k: Measurement("fluss", f"metrics.{k}.ratio", "ratio", note="on / off, per pair of rounds")
              for k in ("append", "lookup")}
    with LocalCluster(tablet_servers=3) as off, LocalCluster(tablet_servers=3, metrics=True) as on:
        scraper = Scraper(list(on.metrics_endpoints().values()))
        sides = {"off": await _setup(off.bootstrap_servers, False, kv_rows),
                 "on": await _setup(on.bootstrap_servers, True, kv_rows)}
        rng = np.random.default_rng(5)
        try:
            for r in range(PAIRS_PER_ROUND * profile.rounds + 1):  # round 0 warms up
                batch = make_batch(rows, seed=r, start_seq=r * rows)
                keys = rng.integers(0, kv_rows, lookups).tolist()
                got: dict[str, tuple[float, float]] = {}
                for side in (("off", "on") if r % 2 else ("on", "off")):
                    conn, writer, lookuper = sides[side]
                    scraper.active.set() if side == "on" else scraper.active.clear()
                    got[side] = (await _append_round(writer, batch), await _lookup_round(lookuper, keys))
                scraper.active.clear()
                if r:
                    for side in ("off", "on"):
                        append[side].rounds.append(got[side][0])
                        lookup[side].rounds.append(got[side][1])
                    ratios["append"].rounds.append(got["on"][0] / got["off"][0])
                    ratios["lookup"].rounds.append(got["on"][1] / got["off"][1])
        finally:
            scraper.close()
            for conn, writer, lookuper in sides.values():
                await writer.aclose()
                await lookuper.aclose()
                await conn.aclose()
        note = (f"{rows} rows per append round, {lookups} lookups per round, rounds alternate "
                f"between the two clusters; 'on': reporters on, client metrics on, {scraper.scrapes} scrapes")
        for m in (*append.values(), *lookup.values()):
            m.note = note
    out += [*append.values(), *lookup.values(), *ratios.values()]
    out.append(Measurement("fluss", "metrics.hotpath.ns", "ns", [hotpath_ns()], better="lower",
                           note="TableMetrics.written per bucket entry of a write (min of 3 x 1M calls)"))
    try:
        out.append(await _scrape_1000_buckets())
    except Exception as e:  # the on/off figures above stand on their own
        out.append(Measurement("fluss", "metrics.scrape.1000_buckets", "ms", status=FAILED,
                               note=f"{type(e).__name__}: {e}"))
    return out


def run(profile: Profile) -> list[Measurement]:
    return asyncio.run(_run(profile))


if __name__ == "__main__":
    from bench.model import QUICK

    for measurement in run(QUICK):
        print(measurement.key, measurement.unit, measurement.median, measurement.note)
