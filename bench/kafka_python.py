"""Peer, the Python user's view: the same Kafka broker driven by ``confluent-kafka`` (librdkafka) from Python.

Each row is one Kafka message whose value is the row's 42 value bytes (a packed struct, made with numpy before the
clock starts); the per-message ``produce()`` call is the nature of Kafka's API.
- ``log.append``: ``produce()`` per row then ``flush()``; ``acks=all``, ``compression.type=zstd``, ``linger.ms=5``.
- ``log.scan.full``: a consumer assigned to every partition from the beginning, ``consume()`` in batches of
  ``CONSUME_BATCH`` until it has read the topic (no group join).
- ``log.latency.p50/p99``: a steady producer (one tick of rows every 10 ms, ``linger.ms=2``, send time in the
  value) and a consumer thread; latency = ``consume()`` return time - the message's send time.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from bench.data import make_batch
from bench.model import Measurement, Profile
from bench.monitor import PeakRss

SYSTEM = "kafka-python"
TopicMaker = Callable[[str, int], None]  # creates a topic: (name, partitions)
PARTITIONS = 3
CONSUME_BATCH = 10_000
TICK_S = 0.01
LATENCY_WARMUP_S = 1.0
DRAIN_TIMEOUT_S = 15.0
SCAN_TIMEOUT_S = 120.0
ROW_DTYPE = np.dtype([("ts", "<i8"), ("seq", "<i8"), ("i0", "<i4"), ("i1", "<i4"), ("f0", "<f4"), ("f1", "<f4"),
                      ("h0", "<i2"), ("h1", "<i2"), ("s0", "S3"), ("s1", "S3")])  # 42 bytes, packed


def pack_rows(batch: pa.RecordBatch) -> np.ndarray:
    """The rows as packed 42-byte structs (column by column; the strings are exactly 3 bytes each)."""
    out = np.empty(batch.num_rows, dtype=ROW_DTYPE)
    for name in ROW_DTYPE.names:
        col = batch.column(name)
        if pa.types.is_string(col.type):
            out[name] = np.frombuffer(col.buffers()[2], dtype="S3", count=len(col), offset=col.offset * 3)
        else:
            out[name] = col.to_numpy()
    return out


def _values(rows: np.ndarray) -> list[bytes]:
    raw = rows.tobytes()
    size = ROW_DTYPE.itemsize
    return [raw[i:i + size] for i in range(0, len(raw), size)]  # one bytes object per message


def _producer(bootstrap: str, linger_ms: int):
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": "zstd",
                     "linger.ms": linger_ms, "batch.size": 1_048_576, "queue.buffering.max.messages": 2_000_000})


def _produce_all(producer, topic: str, values: list[bytes]) -> None:
    for v in values:
        try:
            producer.produce(topic, v)
        except BufferError:  # local queue full: serve delivery reports, then retry once
            producer.poll(0.05)
            producer.produce(topic, v)
    producer.flush(60)


def _scan(bootstrap: str, topic: str, total: int) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        t0 = time.perf_counter()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        got, deadline = 0, time.monotonic() + SCAN_TIMEOUT_S
        while got < total and time.monotonic() < deadline:
            got += sum(1 for m in consumer.consume(CONSUME_BATCH, timeout=1.0) if m.error() is None)
        dt = time.perf_counter() - t0
    finally:
        consumer.close()
    if got < total:
        raise RuntimeError(f"consumer read {got} of {total} messages")
    return total / dt


def measure_throughput(bootstrap: str, create_topic: TopicMaker, profile: Profile,
                       pids: dict[str, int | None]) -> list[Measurement]:
    """Append and scan rows/s through confluent-kafka (``create_topic(name, partitions)`` makes the topic)."""
    topic = "bench-python"
    create_topic(topic, PARTITIONS)
    n = profile.peer_rows_per_round * 2  # librdkafka is cheaper per row than a Redis pipeline
    rounds = [_values(pack_rows(make_batch(n, seed=r, start_seq=r * n))) for r in range(profile.rounds + 1)]
    append = Measurement(SYSTEM, "log.append", "rows/s", note="confluent-kafka produce() per row, acks=all, zstd")
    scan = Measurement(SYSTEM, "log.scan.full", "rows/s", note=f"confluent-kafka consume({CONSUME_BATCH})")
    producer = _producer(bootstrap, linger_ms=5)
    with PeakRss(pids) as rss:
        for r, values in enumerate(rounds):
            t0 = time.perf_counter()
            _produce_all(producer, topic, values)
            if r:
                append.rounds.append(n / (time.perf_counter() - t0))
    append.rss_peak_mb = rss.peaks_mb()
    total = n * len(rounds)
    with PeakRss(pids) as rss:
        for _ in range(profile.rounds):  # the produce rounds warmed the broker: no warm-up round
            scan.rounds.append(_scan(bootstrap, topic, total))
    scan.rss_peak_mb = rss.peaks_mb()
    scan.note += f", {total} messages per scan"
    return [append, scan]


def measure_latency(bootstrap: str, create_topic: TopicMaker, profile: Profile,
                    pids: dict[str, int | None]) -> list[Measurement]:
    """Append→consume latency at a steady ``latency_rate`` rows/s: p50 and p99 per round (ms)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    topic = "latency-python"
    create_topic(topic, PARTITIONS)
    per_tick = max(1, round(profile.latency_rate * TICK_S))
    template = pack_rows(make_batch(per_tick, seed=7))
    ticks = round((LATENCY_WARMUP_S + profile.rounds * profile.latency_round_s) / TICK_S)
    sent_total = ticks * per_tick
    received: list[tuple[np.ndarray, int]] = []
    stop = threading.Event()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])

    def consume() -> None:
        got, deadline = 0, None
        while got < sent_total:
            if stop.is_set():
                deadline = deadline or time.monotonic() + DRAIN_TIMEOUT_S
                if time.monotonic() > deadline:
                    return
            first = consumer.poll(0.1)  # returns on the first message; consume(n, t) would wait for n or t
            batch = [first, *consumer.consume(999, timeout=0)] if first is not None else []
            now_us = time.time_ns() // 1000
            msgs = [m for m in batch if m.error() is None]
            if msgs:
                ts = np.frombuffer(b"".join(m.value() for m in msgs), dtype=ROW_DTYPE)["ts"]
                received.append((ts, now_us))
                got += len(msgs)

    producer = _producer(bootstrap, linger_ms=2)
    p50 = Measurement(SYSTEM, "log.latency.p50", "ms", better="lower")
    p99 = Measurement(SYSTEM, "log.latency.p99", "ms", better="lower")
    with PeakRss(pids) as rss:
        thread = threading.Thread(target=consume, name="bench-kafka-consumer", daemon=True)
        thread.start()
        start_us = time.time_ns() // 1000
        t_next = time.monotonic()
        for _ in range(ticks):
            time.sleep(max(0.0, t_next - time.monotonic()))
            rows = template.copy()
            rows["ts"] = time.time_ns() // 1000
            for v in _values(rows):
                producer.produce(topic, v)
            producer.poll(0)
            t_next += TICK_S
        elapsed = time.time_ns() // 1000 - start_us
        producer.flush(30)
        stop.set()
        thread.join(DRAIN_TIMEOUT_S + 5)
    consumer.close()
    count = sum(len(ts) for ts, _ in received)
    if count < sent_total:
        raise RuntimeError(f"consumer received {count} of {sent_total} messages")
    sent = np.concatenate([ts for ts, _ in received])
    lat_ms = np.concatenate([now - ts for ts, now in received]) / 1000.0
    window = int(profile.latency_round_s * 1e6)
    first = start_us + int(LATENCY_WARMUP_S * 1e6)
    for k in range(profile.rounds):
        sel = lat_ms[(sent >= first + k * window) & (sent < first + (k + 1) * window)]
        if sel.size:
            p50.rounds.append(float(np.percentile(sel, 50)))
            p99.rounds.append(float(np.percentile(sel, 99)))
    for m in (p50, p99):
        m.note = f"confluent-kafka, linger.ms=2; {sent_total / (elapsed / 1e6):,.0f} rows/s achieved"
        m.rss_peak_mb = rss.peaks_mb()
    return [p50, p99]
