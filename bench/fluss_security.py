"""The data path with security on, next to off (issue #17): the same append and full-scan scenarios as
``bench.fluss_log`` (``write_arrow_batch`` + ``flush``, acks=all, RF=1; ``to_arrow()`` of the whole table), on

- ``security.*.off``: a cluster with no security at all (one plaintext listener);
- ``security.*.sasl_acl``: a cluster with SASL/PLAIN on the client listener and the ACL authorizer on, the
  client authenticated as a user who holds ALL on the database (not a super user, so every request is
  authenticated and authorized the full way);
- ``security.*.sasl_tls_acl``: the same with the client listener (and the internal one) also served over TLS
  (``LocalCluster(tls=True)``, gRPC's TLS, ECDSA P-256 certificates of a throw-away CA).

Each cluster has one tablet server (small on a shared 2-core machine); the ratios to ``off`` are the figures that
matter.
"""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa

import fluss
from bench.data import make_batch
from bench.fluss_log import BUCKETS, SCHEMA, _close, measure_append, server_pids
from bench.model import Measurement, Profile

USERS = {"admin": "admin-secret", "bench": "bench-secret"}


async def _table(conn: fluss.FlussConnection) -> fluss.TablePath:
    admin = conn.get_admin()
    await admin.create_database("bench", ignore_if_exists=True)
    path = fluss.TablePath("bench", "security")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS, properties={
        "table.replication.factor": "1", "table.log.arrow.compression.type": "ZSTD"}), ignore_if_exists=True)
    return path


async def _scan(conn: fluss.FlussConnection, path: fluss.TablePath, key: str, rounds: int) -> Measurement:
    m = Measurement("fluss", key, "rows/s")
    table = await conn.get_table(path)
    for r in range(rounds + 1):
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets(dict.fromkeys(range(BUCKETS), fluss.EARLIEST_OFFSET))
        t0 = time.perf_counter()
        result: pa.Table = scanner.to_arrow()
        if asyncio.iscoroutine(result):
            result = await result
        dt = time.perf_counter() - t0
        await _close(scanner)
        if r:
            m.rounds.append(result.num_rows / dt)
            m.note = f"{result.num_rows} rows per scan"
    return m


async def _measure(config: dict[str, str], suffix: str, profile: Profile, pids,
                   path: fluss.TablePath | None = None) -> list[Measurement]:
    conn = await fluss.FlussConnection.create(fluss.Config(config))
    try:
        path = path or await _table(conn)
        out = await measure_append(conn, path, f"security.append.{suffix}", profile, pids)
        out.append(await _scan(conn, path, f"security.scan.{suffix}", profile.rounds))
        return out
    finally:
        await _close(conn)


async def _run(profile: Profile) -> list[Measurement]:
    from fluss.server.cluster import LocalCluster

    make_batch(10)  # import-time work out of the timed part
    out: list[Measurement] = []
    with LocalCluster(tablet_servers=1) as plain:
        out += await _measure({"bootstrap.servers": plain.bootstrap_servers}, "off", profile, server_pids(plain))
    for suffix, tls in (("sasl_acl", False), ("sasl_tls_acl", True)):
        with LocalCluster(tablet_servers=1, sasl_users=USERS, super_users=["admin"], tls=tls) as secured:
            admin = await fluss.FlussConnection.create(fluss.Config(secured.sasl_config("admin")))
            try:
                path = await _table(admin)
                await admin.get_admin().create_acls([fluss.AclBinding(
                    fluss.Resource.database("bench"), fluss.Principal.user("bench"), fluss.OperationType.ALL)])
            finally:
                await _close(admin)
            out += await _measure(secured.sasl_config("bench"), suffix, profile, server_pids(secured), path)
    return out


def run(profile: Profile) -> list[Measurement]:
    return asyncio.run(_run(profile))
