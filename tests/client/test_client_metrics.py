"""Client metrics (``client.metrics.enabled``): what writers, scanners and lookupers count, read from Python and
exported through Prometheus, against known traffic on the shared cluster (and a leader kill for retries)."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest
from prometheus_client import CollectorRegistry, generate_latest

import fluss
from fluss.metrics.scrape import parse, scrape
from fluss.server.cluster import LocalCluster
from fluss.server.zk.local_server import free_port

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _config(bootstrap: str, **extra: str) -> fluss.Config:
    return fluss.Config({"bootstrap.servers": bootstrap, "client.metrics.enabled": "true", **extra})


def _rows(snapshot: dict, name: str, **labels: str) -> list[dict]:
    return [r for r in snapshot.get(name, []) if all(r["labels"].get(k) == v for k, v in labels.items())]


def _batch(start: int, n: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array(range(start, start + n), pa.int64()), pa.array(["v"] * n)], schema=SCHEMA)


async def test_metrics_are_off_by_default(conn):
    assert conn.metrics is None


async def _with_leaders_serving(conn, path: fluss.TablePath, buckets: int) -> None:
    """A new table's first write may meet a replica still being created (a retry): writes ``buckets`` * 5 keyed
    rows through ``conn`` (its own metrics, if any) until every bucket has a row."""
    writer = (await conn.get_table(path)).new_append().create_writer()
    writer.write_arrow_batch(_batch(-buckets * 5, buckets * 5))
    await writer.flush()
    ends = await conn.get_admin().list_offsets(path, list(range(buckets)), fluss.OffsetSpec.latest())
    assert all(ends[b] > 0 for b in range(buckets)), ends


async def test_writer_counts_records_batches_and_buffer(cluster, conn, database):
    async with await fluss.FlussConnection.create(_config(cluster.bootstrap_servers)) as mc:
        path = fluss.TablePath(database, "written")
        descriptor = fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=2, bucket_keys=["id"])
        await mc.get_admin().create_table(path, descriptor)
        await _with_leaders_serving(conn, path, 2)  # so that the retries counted below are none
        writer = (await mc.get_table(path)).new_append().create_writer()
        for i in range(5):
            writer.write_arrow_batch(_batch(i * 1000, 1000))
            await writer.flush()
        snap = mc.metrics.snapshot()
        labels = {"database": database, "table": "written"}
        assert _rows(snap, "fluss_client_writer_recordSendPerSecond", **labels)[0]["count"] == 5000
        assert _rows(snap, "fluss_client_writer_bytesSendPerSecond", **labels)[0]["count"] > 5000
        per_batch = _rows(snap, "fluss_client_writer_recordsPerBatch", **labels)[0]
        assert per_batch["count"] >= 5 and per_batch["sum"] == 5000
        assert _rows(snap, "fluss_client_writer_sendLatencyMs", **labels)[0]["count"] >= 5
        assert _rows(snap, "fluss_client_writer_batchQueueTimeMs", **labels)[0]["count"] == per_batch["count"]
        total = _rows(snap, "fluss_client_writer_bufferTotalBytes", **labels)[0]["value"]
        assert total == 64 * 2**20
        assert _rows(snap, "fluss_client_writer_bufferAvailableBytes", **labels)[0]["value"] == total  # all acked
        assert _rows(snap, "fluss_client_writer_recordsRetryPerSecond", **labels)[0]["count"] == 0


async def test_scanner_lag_per_bucket_falls_to_zero(cluster, database):
    cfg = _config(cluster.bootstrap_servers, **{"scanner.log.fetch.max-bytes-for-bucket": "1kb"})
    async with await fluss.FlussConnection.create(cfg) as mc:
        path = fluss.TablePath(database, "scanned")
        schema = fluss.Schema(SCHEMA)
        await mc.get_admin().create_table(path, fluss.TableDescriptor(schema, bucket_count=2, bucket_keys=["id"]))
        table = await mc.get_table(path)
        writer = table.new_append().create_writer()
        for i in range(20):  # many small batches, so a 1kb fetch gets only part of a bucket
            writer.write_arrow_batch(_batch(i * 100, 100))
            await writer.flush()
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
        read = (await scanner.poll_arrow(5000)).num_rows
        snap = mc.metrics.snapshot()
        lags = _rows(snap, "fluss_client_scanner_bucket_recordsLag", database=database, table="scanned")
        assert {r["labels"]["bucket"] for r in lags} <= {"0", "1"} and lags
        assert sum(r["value"] for r in lags) > 0, "after one small fetch the scanner is behind"
        for _ in range(200):
            read += (await scanner.poll_arrow(500)).num_rows
            if read >= 2000:
                break
        assert read == 2000
        snap = mc.metrics.snapshot()
        lags = _rows(snap, "fluss_client_scanner_bucket_recordsLag", database=database, table="scanned")
        assert len(lags) == 2 and all(r["value"] == 0 for r in lags)
        total = _rows(snap, "fluss_client_scanner_recordsLag", database=database, table="scanned")
        assert total[0]["value"] == 0
        assert _rows(snap, "fluss_client_scanner_fetchRequestsPerSecond", table="scanned")[0]["count"] >= 2
        assert _rows(snap, "fluss_client_scanner_bytesPerRequest", table="scanned")[0]["sum"] > 0
        await scanner.aclose()
        assert not _rows(mc.metrics.snapshot(), "fluss_client_scanner_bucket_recordsLag", table="scanned")


async def test_lookup_counts_and_latency(cluster, database):
    async with await fluss.FlussConnection.create(_config(cluster.bootstrap_servers)) as mc:
        path = fluss.TablePath(database, "looked_up")
        await mc.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["id"]),
                                                                        bucket_count=2))
        table = await mc.get_table(path)
        upsert = table.new_upsert().create_writer()
        for i in range(100):
            upsert.upsert({"id": i, "name": f"n{i}"})
        await upsert.flush()
        lookuper = table.new_lookup().create_lookuper()
        found = await asyncio.gather(*(lookuper.lookup({"id": i}) for i in range(150)))
        assert sum(1 for r in found if r is not None) == 100
        snap = mc.metrics.snapshot()
        labels = {"database": database, "table": "looked_up"}
        assert _rows(snap, "fluss_client_lookuper_lookupsPerSecond", **labels)[0]["count"] == 150
        requests = _rows(snap, "fluss_client_lookuper_lookupRequestsPerSecond", **labels)[0]["count"]
        latency = _rows(snap, "fluss_client_lookuper_lookupLatencyMs", **labels)[0]
        assert 1 <= requests <= 150 and latency["count"] == requests and latency["sum"] > 0
        assert _rows(snap, "fluss_client_writer_recordSendPerSecond", **labels)[0]["count"] == 100


async def test_exported_through_an_app_registry_and_the_connections_own_endpoint(cluster, database):
    port = free_port()
    cfg = _config(cluster.bootstrap_servers, **{"client.id": "app-1", "metrics.reporters": "prometheus",
                                                 "metrics.reporter.prometheus.port": str(port)})
    async with await fluss.FlussConnection.create(cfg) as mc:
        path = fluss.TablePath(database, "exported")
        await mc.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=1))
        writer = (await mc.get_table(path)).new_append().create_writer()
        writer.write_arrow_batch(_batch(0, 321))
        await writer.flush()
        registry = CollectorRegistry()
        mc.metrics.register(registry)
        text = generate_latest(registry).decode()
        sel = dict(client_id="app-1", database=database, table="exported")
        assert parse(text).value("fluss_client_writer_recordSend_total", **sel) == 321
        assert scrape(f"127.0.0.1:{port}").value("fluss_client_writer_recordSend_total", **sel) == 321
    with pytest.raises(OSError):  # closed with the connection
        scrape(f"127.0.0.1:{port}", timeout_s=2)


async def test_writer_retries_are_counted_when_a_leader_dies():
    with LocalCluster(tablet_servers=2, zookeeper_session_timeout="2s") as c:
        async with await fluss.FlussConnection.create(_config(c.bootstrap_servers)) as mc:
            path = fluss.TablePath("fluss", "retried")
            await mc.get_admin().create_table(path, fluss.TableDescriptor(
                fluss.Schema(SCHEMA), bucket_count=1, properties={"table.replication.factor": "2"}))
            writer = (await mc.get_table(path)).new_append().create_writer()
            writer.write_arrow_batch(_batch(0, 100))
            await writer.flush()
            resp = await mc.run(mc.cluster.update_metadata([path]))
            leader = resp.tables[0].buckets[0].leader_id
            c.kill_tablet_server(leader)
            for i in range(1, 11):
                writer.write_arrow_batch(_batch(i * 100, 100))
            await writer.flush()
            snap = mc.metrics.snapshot()
            labels = {"database": "fluss", "table": "retried"}
            assert _rows(snap, "fluss_client_writer_recordSendPerSecond", **labels)[0]["count"] == 1100
            assert _rows(snap, "fluss_client_writer_recordsRetryPerSecond", **labels)[0]["count"] >= 100
