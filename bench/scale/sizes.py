"""The sizes of a scale run: ``smoke`` (the test of ``make test``), ``quick`` (``make bench-scale``) and ``full``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScaleProfile:
    name: str
    bucket_counts: tuple[int, ...]       # buckets of the table of the append/scan curve
    bucket_rows: int                     # rows appended (and scanned) per round of that curve
    rounds: int                          # counted rounds of the throughput figures (after one warm-up)
    clients: tuple[int, ...]             # concurrent writer / reader processes
    client_rows: int                     # rows each writer appends; rows in the table each reader scans
    create_buckets: tuple[int, ...]      # bucket counts of the created tables
    create_partitions: tuple[int, ...]   # partition counts of the created tables (1 bucket each)
    metadata_tables: tuple[int, ...]     # tables in the cluster when metadata is measured
    metadata_buckets: int                # buckets of each of them
    metadata_requests: int               # metadata requests timed per step and kind
    kv_keys: tuple[int, ...]             # keys of the primary-key bucket of the lookup/recovery curve
    lookups: int                         # single-key lookups timed per size


SMOKE = ScaleProfile("smoke", bucket_counts=(3, 12), bucket_rows=20_000, rounds=1, clients=(1, 2),
                     client_rows=20_000, create_buckets=(1, 16), create_partitions=(2, 8), metadata_tables=(1, 4),
                     metadata_buckets=4, metadata_requests=20, kv_keys=(5_000,), lookups=50)
QUICK = ScaleProfile("quick", bucket_counts=(3, 96, 384), bucket_rows=500_000, rounds=3, clients=(1, 2, 4, 8, 16),
                     client_rows=200_000, create_buckets=(1, 64, 256, 1024), create_partitions=(10, 100, 1000),
                     metadata_tables=(1, 25, 50, 100), metadata_buckets=32, metadata_requests=200,
                     kv_keys=(100_000, 1_000_000), lookups=300)
FULL = ScaleProfile("full", bucket_counts=(3, 24, 96, 192, 384), bucket_rows=2_000_000, rounds=5,
                    clients=(1, 2, 4, 8, 16), client_rows=500_000, create_buckets=(1, 64, 256, 1024),
                    create_partitions=(10, 100, 1000), metadata_tables=(1, 25, 50, 100), metadata_buckets=32,
                    metadata_requests=1000, kv_keys=(1_000_000, 10_000_000), lookups=1000)
PROFILES = {p.name: p for p in (SMOKE, QUICK, FULL)}
