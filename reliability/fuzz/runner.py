"""The protocol fuzzer's run: a real cluster, protected data, then many random and mutated requests.

1. Start a ``LocalCluster`` (3 tablet servers, 2 coordinators), write rows into the protected database (a log
   table and a primary-key table) and a scratch table, and take a digest of the protected data (per table:
   row count and a SHA-256 of every row, read straight from the bucket leaders).
2. Send ``requests`` requests (``messages.KINDS``, round-robin over every RPC of every service, to the service's
   servers and now and then to a server of another service), ``concurrency`` at a time, each with a deadline.
3. Check: every request was answered within the bound (a FetchLog that asked to wait longer may run into the
   deadline: it is long-polling as asked), no error message names a server path, every server process is up
   and registered, the protected data has the same digest, and the scratch table still decodes.

The report counts requests per RPC and per outcome (gRPC status, Fluss error codes of the response).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa

import fluss
from fluss.errors import ErrorCode, error_name
from fluss.record.log_batch import iter_batches
from fluss.rpc.channels import ChannelFactory
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster
from reliability.fuzz import messages
from reliability.raw import RawRpc

log = logging.getLogger(__name__)

LOG_SCHEMA = pa.schema([("v", pa.int64()), ("s", pa.string())])
KV_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("s", pa.string())])
SERVICES = {name: s for name, s in pb.DESCRIPTOR.services_by_name.items()}
SUSPICIOUS_CODES = {ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.LOG_STORAGE_EXCEPTION, ErrorCode.KV_STORAGE_EXCEPTION,
                    ErrorCode.STORAGE_EXCEPTION}


@dataclass
class FuzzConfig:
    requests: int = 20_000
    seed: int = 0
    concurrency: int = 8
    deadline_s: float = 10.0
    kinds: tuple[str, ...] = messages.KINDS


def run(config: FuzzConfig) -> dict[str, Any]:
    with LocalCluster(tablet_servers=3, coordinators=2, zookeeper_session_timeout="3s",
                      server_config={"default.replication.factor": "2", "max.bucket.num": "16",
                                     "max.partition.num": "20"}) as cluster:
        return asyncio.run(_run(cluster, config))


async def _run(cluster: LocalCluster, config: FuzzConfig) -> dict[str, Any]:
    raw = RawRpc(cluster.bootstrap_servers)
    try:
        ctx = await _prepare(cluster, raw)
        before = await asyncio.to_thread(digest, raw)
        started = time.monotonic()
        outcomes = await _fuzz(cluster, raw, ctx, config)
        elapsed = time.monotonic() - started
        await asyncio.sleep(2)  # let leadership changes caused by the traffic settle
        alive = {p.name: p.alive() for p in [*cluster._coordinators, *cluster._tablets.values()]}  # noqa: SLF001
        registered = sorted(raw.tablet_servers())
        after = await asyncio.to_thread(digest, raw)
        scratch_ok, scratch_rows = await asyncio.to_thread(_scratch_readable, raw)
    finally:
        raw.close()
    details: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        if o["status"] != "OK":
            details[o["status"]][o.get("details", "")[:120]] += 1
    by_method: dict[str, Counter] = defaultdict(Counter)
    codes: Counter = Counter()
    statuses: Counter = Counter()
    violations = []
    latencies = []
    for o in outcomes:
        by_method[o["method"]][o["status"]] += 1
        statuses[o["status"]] += 1
        for code in o["codes"]:
            codes[error_name(code)] += 1
        latencies.append(o["latency_s"])
        if o.get("violation"):
            violations.append(o)
    report = {
        "requests": len(outcomes),
        "requests_per_second": round(len(outcomes) / max(elapsed, 1e-9), 1),
        "methods": len(by_method),
        "kinds": dict(Counter(o["kind"] for o in outcomes)),
        "grpc_status": dict(statuses),
        "grpc_details": {status: dict(c.most_common(5)) for status, c in details.items()},
        "error_codes": dict(codes.most_common()),
        "per_method": {m: dict(c) for m, c in sorted(by_method.items())},
        "max_latency_s": round(max(latencies, default=0.0), 3),
        "violations": {"count": len(violations), "examples": violations[:10]},
        "server_failures": [o for o in outcomes if o.get("messages")][:20],
        "servers_alive": alive,
        "tablet_servers_registered": registered,
        "protected_data": {"before": before, "after": after, "intact": before == after},
        "scratch_table_readable": scratch_ok,
        "scratch_rows": scratch_rows,
    }
    report["valid"] = (not violations and all(alive.values()) and len(registered) == 3 and before == after
                       and scratch_ok)
    return report


# ------------------------------------------------------------ setup and checks


async def _prepare(cluster: LocalCluster, raw: RawRpc) -> messages.Context:
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
    try:
        admin = conn.get_admin()
        for db in (messages.PROTECTED_DATABASE, "fuzz"):
            await admin.create_database(db, ignore_if_exists=True)
        tables = {"events": (messages.PROTECTED_DATABASE, LOG_SCHEMA, None), "state": (
            messages.PROTECTED_DATABASE, KV_SCHEMA, ["k"]), "scratch": ("fuzz", LOG_SCHEMA, None)}
        for name, (db, schema, pk) in tables.items():
            await admin.create_table(fluss.TablePath(db, name), fluss.TableDescriptor(
                fluss.Schema(schema, primary_keys=pk), bucket_count=3))
            await asyncio.to_thread(raw.wait_for_full_isr, db, name)
        events = await conn.get_table(fluss.TablePath(messages.PROTECTED_DATABASE, "events"))
        writer = events.new_append().create_writer()
        writer.write_arrow(pa.table({"v": pa.array(range(3000), pa.int64()),
                                     "s": pa.array([f"row-{i}" for i in range(3000)])}))
        await writer.flush()
        state = await conn.get_table(fluss.TablePath(messages.PROTECTED_DATABASE, "state"))
        upserts = state.new_upsert().create_writer()
        upserts.upsert_arrow_batch(pa.table({"k": pa.array(range(500), pa.int64()),
                                             "s": pa.array([f"value-{i}" for i in range(500)])}))
        await upserts.flush()
    finally:
        await conn.aclose()
    ids = {name: raw.table_info(db, name).table_id for name, (db, _, _) in tables.items()}
    return messages.Context(table_ids=list(ids.values()), scratch_table_id=ids["scratch"],
                            server_ids=sorted(raw.tablet_servers()), log_schema=LOG_SCHEMA,
                            kv_table_ids=[ids["state"]], kv_schema=KV_SCHEMA,
                            protected_log_table_id=ids["events"], protected_kv_table_id=ids["state"])


def digest(raw: RawRpc) -> dict[str, Any]:
    """Per protected table: rows and a SHA-256 over them (log: offset order per bucket; KV: by key)."""
    out = {}
    db = messages.PROTECTED_DATABASE
    raw.wait_for_full_isr(db, "events", timeout_s=120)
    info = raw.table_info(db, "events")
    h, rows = hashlib.sha256(), 0
    for b in raw.buckets(db, "events"):
        for batch in _fetch_all(raw, b.leader_id, info.table_id, b.bucket_id):
            rb = batch.to_arrow(LOG_SCHEMA)
            rows += rb.num_rows
            h.update(repr((b.bucket_id, batch.base_offset, rb.to_pydict())).encode())
    out["events"] = {"rows": rows, "sha256": h.hexdigest()}
    raw.wait_for_full_isr(db, "state", timeout_s=120)
    info = raw.table_info(db, "state")
    kv_rows: list[tuple] = []
    for b in raw.buckets(db, "state"):
        resp = raw.tablet(b.leader_id).ScanKv(pb.ScanKvRequest(table_id=info.table_id, partition_id=-1,
                                                               bucket_id=b.bucket_id), timeout=30)
        if resp.error.code:
            raise RuntimeError(f"ScanKv of protected.state bucket {b.bucket_id}: {resp.error.message}")
        for batch in iter_batches(resp.rows, validate=True):
            d = batch.to_arrow(KV_SCHEMA).to_pydict()
            kv_rows += list(zip(d["k"], d["s"], strict=True))
    out["state"] = {"rows": len(kv_rows), "sha256": hashlib.sha256(repr(sorted(kv_rows)).encode()).hexdigest()}
    return out


def _fetch_all(raw: RawRpc, leader: int, table_id: int, bucket: int):
    offset = 0
    while True:
        r = raw.fetch(leader, table_id, offset, bucket=bucket)
        if r.error.code:
            raise RuntimeError(f"fetch of table {table_id} bucket {bucket} at {offset}: {r.error.message}")
        batches = list(iter_batches(r.records, validate=True))
        if not batches:
            return
        yield from batches
        offset = batches[-1].next_offset


def _scratch_readable(raw: RawRpc) -> tuple[bool, int]:
    """Whether every batch of the scratch table (which fuzzed requests may have appended to) still decodes."""
    info = raw.table_info("fuzz", "scratch")
    rows = 0
    try:
        raw.wait_for_full_isr("fuzz", "scratch", timeout_s=120)
        for b in raw.buckets("fuzz", "scratch"):
            for batch in _fetch_all(raw, b.leader_id, info.table_id, b.bucket_id):
                rows += batch.to_arrow(LOG_SCHEMA).num_rows
    except Exception:  # noqa: BLE001 - reported as not readable
        log.exception("the scratch table cannot be read back")
        return False, rows
    return True, rows


# ------------------------------------------------------------ fuzzing


def _targets(cluster: LocalCluster, raw: RawRpc) -> dict[str, list[str]]:
    coordinators = [f"{c.host}:{c.port}" for c in cluster._coordinators]  # noqa: SLF001
    tablets = list(raw.tablet_servers().values())
    return {"AdminService": coordinators, "CoordinatorService": coordinators, "TabletService": tablets}


async def _fuzz(cluster: LocalCluster, raw: RawRpc, ctx: messages.Context, config: FuzzConfig) -> list[dict]:
    rng = random.Random(config.seed)
    targets = _targets(cluster, raw)
    leaders = _leaders(raw)
    channels: dict[str, grpc.aio.Channel] = {}
    methods = [(s.name, m) for s in SERVICES.values() for m in s.methods]
    outcomes: list[dict] = []
    data_dir = str(cluster.dir)

    async def one(i: int) -> None:
        """One request (its payload built before the clock starts: generating a few MiB takes a while)."""
        service, method = methods[i % len(methods)]
        kind = rng.choice(config.kinds)
        if kind == "corrupt-arrow":  # aimed at the write path, where batches are validated
            service, method = "TabletService", SERVICES["TabletService"].methods_by_name[rng.choice(
                ["ProduceLog", "PutKv"])]
        request_type = getattr(pb, method.input_type.name)
        response_type = getattr(pb, method.output_type.name)
        payload = messages.generate(rng, kind, method.name, request_type, ctx)
        pool = targets[service] if rng.random() < 0.95 else [a for v in targets.values() for a in v]
        address = rng.choice(pool)
        if kind == "corrupt-arrow" and method.name in ("ProduceLog", "PutKv"):
            address = _leader_of(payload, request_type, leaders) or address  # where the batch is validated
        channel = channels.get(address)
        if channel is None:
            channel = channels[address] = ChannelFactory().channel(address)
        call = channel.unary_unary(f"/fluss.rpc.{service}/{method.name}",
                                   response_deserializer=response_type.FromString)
        outcome = {"method": method.name, "kind": kind, "address": address, "codes": []}
        t0 = time.monotonic()
        try:
            response = await call(payload, timeout=config.deadline_s)
            outcome["status"] = "OK"
            outcome["codes"] = _codes(response)
            messages_text = " ".join(_messages(response))
            if SUSPICIOUS_CODES & set(outcome["codes"]):  # kept for the report: a server-side failure to explain
                outcome["messages"] = [m[:300] for m in _messages(response) if m]
            if data_dir in messages_text:
                outcome["violation"] = "an error message names a server path"
        except grpc.aio.AioRpcError as e:
            outcome["status"] = e.code().name
            outcome["details"] = (e.details() or "")[:200]
            if data_dir in (e.details() or ""):
                outcome["violation"] = "a gRPC error names a server path"
            if e.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE) \
                    and not _asked_to_wait(method.name, request_type, payload, config.deadline_s):
                outcome["violation"] = f"no answer within {config.deadline_s}s ({e.code().name})"
        outcome["latency_s"] = round(time.monotonic() - t0, 4)
        outcomes.append(outcome)

    queue = iter(range(config.requests))

    async def worker() -> None:
        for i in queue:
            await one(i)

    try:
        await asyncio.gather(*(worker() for _ in range(config.concurrency)))
    finally:
        for ch in channels.values():
            await ch.close()
    return outcomes


def _leaders(raw: RawRpc) -> dict[tuple[int, int], str]:
    """The leader address of every bucket of the fuzzed tables, by ``(table_id, bucket)``."""
    servers = raw.tablet_servers()
    out = {}
    for db, table in ((messages.PROTECTED_DATABASE, "events"), (messages.PROTECTED_DATABASE, "state"),
                      ("fuzz", "scratch")):
        table_id = raw.table_info(db, table).table_id
        for b in raw.buckets(db, table):
            if b.leader_id in servers:
                out[(table_id, b.bucket_id)] = servers[b.leader_id]
    return out


def _leader_of(payload: bytes, request_type: type, leaders: dict[tuple[int, int], str]) -> str | None:
    req = request_type.FromString(payload)
    return leaders.get((req.table_id, req.buckets[0].bucket_id)) if req.buckets else None


def _asked_to_wait(method: str, request_type: type, payload: bytes, deadline_s: float) -> bool:
    """A FetchLog that asked to long-poll longer than the deadline, or a write that asked to wait longer for
    its replicas, may legitimately still be waiting."""
    try:
        req = request_type.FromString(payload)
    except Exception:  # noqa: BLE001 - undecodable: the server had nothing to wait for
        return False
    if method == "FetchLog":
        return req.max_wait_ms >= deadline_s * 1000 * 0.5
    if method in ("ProduceLog", "PutKv"):
        return req.timeout_ms >= deadline_s * 1000 * 0.5 or req.timeout_ms <= 0
    return False


def _codes(msg) -> list[int]:
    """Every ``ErrorInfo.code`` in a response (top level and per bucket/table)."""
    out = []
    for f, value in msg.ListFields():
        if f.message_type is None:
            continue
        values = value if f.label == f.LABEL_REPEATED else [value]
        for v in values:
            if f.message_type.name == "ErrorInfo":
                out.append(v.code)
            elif hasattr(v, "ListFields"):
                out += _codes(v)
    return out


def _messages(msg) -> list[str]:
    out = []
    for f, value in msg.ListFields():
        if f.message_type is None:
            continue
        values = value if f.label == f.LABEL_REPEATED else [value]
        for v in values:
            if f.message_type.name == "ErrorInfo":
                out.append(v.message)
            elif hasattr(v, "ListFields"):
                out += _messages(v)
    return out


def summary(report: dict[str, Any]) -> str:
    lines = [f"fuzzed {report['requests']} requests over {report['methods']} RPCs "
             f"({report['requests_per_second']}/s), valid={report['valid']}",
             f"  kinds: {report['kinds']}",
             f"  gRPC status: {report['grpc_status']}",
             f"  gRPC details (most frequent): {report['grpc_details']}",
             f"  error codes in responses: {report['error_codes']}",
             f"  max latency {report['max_latency_s']}s; violations: {report['violations']['count']}",
             f"  servers alive: {all(report['servers_alive'].values())}, registered tablet servers: "
             f"{report['tablet_servers_registered']}",
             f"  protected data intact: {report['protected_data']['intact']} {report['protected_data']['after']}",
             f"  scratch table readable: {report['scratch_table_readable']} ({report['scratch_rows']} rows)"]
    return "\n".join(lines)


def write_report(report: dict[str, Any], path: Path) -> Path:
    """Writes the report as JSON to ``path``, or to ``report.json`` in it when ``path`` is a directory (as the
    nemesis suite's ``--out`` is); returns the file written."""
    import json

    path = Path(path)
    if path.is_dir():
        path = path / "report.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str))
    return path
