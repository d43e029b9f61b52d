"""The `make demo` walk-through: a local cluster of real processes (ZooKeeper, a coordinator, three tablet
servers), databases and tables created through the admin API, a log table written and tailed."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa

import fluss
from fluss.server.cluster import LocalCluster


async def walkthrough(bootstrap: str) -> None:
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    admin = conn.get_admin()

    print("\n== cluster")
    for node in await admin.get_server_nodes():
        print(f"  {node.uid:<6} {node.server_type:<18} {node.host}:{node.port}")

    await admin.create_database("shop", fluss.DatabaseDescriptor(comment="demo database"), ignore_if_exists=True)
    orders = fluss.TablePath("shop", "orders")
    await admin.create_table(orders, fluss.TableDescriptor(
        fluss.Schema(pa.schema([("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()),
                                ("ts", pa.timestamp("ms"))])),
        bucket_count=3, bucket_keys=["customer"], comment="order events"), ignore_if_exists=True)
    customers = fluss.TablePath("shop", "customers")
    await admin.create_table(customers, fluss.TableDescriptor(
        fluss.Schema(pa.schema([("customer", pa.string()), ("name", pa.string()), ("tier", pa.string())]),
                     primary_keys=["customer"]),
        bucket_count=3, properties={"table.replication.factor": "2"}), ignore_if_exists=True)
    clicks = fluss.TablePath("shop", "clicks")
    await admin.create_table(clicks, fluss.TableDescriptor(
        fluss.Schema(pa.schema([("day", pa.string()), ("url", pa.string())])),
        partition_keys=["day"], bucket_count=2), ignore_if_exists=True)
    await admin.create_partition(clicks, {"day": "2024-06-01"}, ignore_if_exists=True)

    print("\n== what the cluster holds")
    for db in await admin.list_databases():
        print(f"  database {db}")
        for name in await admin.list_tables(db):
            info = await admin.get_table_info(fluss.TablePath(db, name))
            kind = f"primary key {info.get_primary_keys()}" if info.has_primary_key() else "log"
            print(f"    table {name}: id {info.table_id}, {info.num_buckets} buckets, {kind}, "
                  f"columns {info.get_schema().get_columns()}")
            if info.is_partitioned():
                for p in await admin.list_partition_infos(info.table_path):
                    print(f"      partition {p.partition_name} (id {p.partition_id})")

    print("\n== write the log table 'shop.orders' and tail it")
    table = await conn.get_table(orders)
    writer = table.new_append().create_writer()
    now = int(time.time() * 1000)
    batch = pa.table({
        "order_id": pa.array(range(1, 10_001), pa.int64()),
        "customer": [f"c{i % 50}" for i in range(10_000)],
        "amount": [round(5 + (i * 7) % 500 / 3, 2) for i in range(10_000)],
        "ts": pa.array([now + i for i in range(10_000)], pa.timestamp("ms")),
    })
    t0 = time.perf_counter()
    writer.write_arrow(batch)
    for i in range(5):
        writer.append({"order_id": 10_001 + i, "customer": "c-live", "amount": 1.0 + i, "ts": None})
    await writer.flush()
    print(f"  wrote 10,005 rows in {time.perf_counter() - t0:.3f}s")
    offsets = await admin.list_offsets(orders, [0, 1, 2], fluss.OffsetSpec.latest())
    print(f"  latest offsets per bucket: {offsets}")

    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(3)})
    seen = 0
    while seen < 10_005:
        records = await scanner.poll(1000)
        seen += len(records)
        for rec in records:
            if rec.row["customer"] == "c-live":
                print(f"  tail: bucket offset {rec.offset} {rec.change_type.short_string()} {rec.row}")
    print(f"  tailed {seen} records")

    projected = await table.new_scan().project_by_name(["customer", "amount"]).create_record_batch_log_scanner()
    projected.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(3)})
    totals = (await projected.to_arrow()).group_by("customer").aggregate([("amount", "sum")]).sort_by(
        [("amount_sum", "descending")])
    print("  top customers by amount (projected scan of 2 columns):")
    for row in totals.slice(0, 3).to_pylist():
        print(f"    {row['customer']}: {row['amount_sum']:.2f}")
    await conn.aclose()


def main() -> None:
    print("Starting a local cluster: ZooKeeper, 1 coordinator, 3 tablet servers ...")
    with LocalCluster(tablet_servers=3) as cluster:
        print(f"bootstrap.servers = {cluster.bootstrap_servers}  (files in {cluster.dir})")
        asyncio.run(walkthrough(cluster.bootstrap_servers))
    print("\nCluster stopped.")


if __name__ == "__main__":
    main()
