"""What one round trip costs with no project code in it: ``python -m reliability.call_floor [--calls N]``.

A bare ``grpc.aio`` echo (generic handler, bytes in and out) and a plain asyncio TCP echo, each server in a child
process on a free loopback port, each called back to back and then once every ``--gap-ms`` (the pace of the
append→poll benchmark: its processes are idle between calls). Prints per mode the median and p90 round trip
and the CPU per call of the server process and of this (client) process, as JSON lines. The figures are the floor
under this project's per-call latency and CPU on the machine at hand (docs/benchmarks.md, round eight).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time

import numpy as np

from bench.monitor import cpu_seconds

ECHO_METHOD = "/floor.Echo/Echo"
PAYLOAD = b"x" * 6000  # about one 100-row batch of the latency benchmark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _serve_grpc(port: int) -> None:
    import grpc

    async def echo(request: bytes, context) -> bytes:
        return request

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "floor.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()


async def _serve_tcp(port: int) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()

    server = await asyncio.start_server(echo, "127.0.0.1", port)
    print("ready", flush=True)
    await server.serve_forever()


def _summary(kind: str, gap_ms: float, rtts_ms: list[float], server_cpu_s: float, client_cpu_s: float) -> dict:
    n = len(rtts_ms)
    return {"kind": kind, "gap_ms": gap_ms, "calls": n, "rtt_p50_ms": round(float(np.median(rtts_ms)), 3),
            "rtt_p90_ms": round(float(np.percentile(rtts_ms, 90)), 3),
            "server_cpu_us_per_call": round(server_cpu_s / n * 1e6), "client_cpu_us_per_call": round(client_cpu_s / n * 1e6)}


async def _measure(kind: str, call, server_pid: int, calls: int, gap_ms: float) -> dict:
    for _ in range(min(100, calls)):  # connection set up and warm
        await call()
    rtts: list[float] = []
    s0, c0 = cpu_seconds(server_pid), time.process_time()
    for _ in range(calls):
        if gap_ms:
            await asyncio.sleep(gap_ms / 1000)
        t0 = time.perf_counter()
        await call()
        rtts.append((time.perf_counter() - t0) * 1000)
    return _summary(kind, gap_ms, rtts, cpu_seconds(server_pid) - s0, time.process_time() - c0)


async def _grpc_rounds(port: int, server_pid: int, calls: int, gaps: list[float]) -> list[dict]:
    import grpc

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        echo = channel.unary_unary(ECHO_METHOD)

        async def call() -> None:
            assert len(await echo(PAYLOAD)) == len(PAYLOAD)

        return [await _measure("grpc.aio echo", call, server_pid, calls, gap) for gap in gaps]


async def _tcp_rounds(port: int, server_pid: int, calls: int, gaps: list[float]) -> list[dict]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def call() -> None:
        writer.write(PAYLOAD)
        await writer.drain()
        await reader.readexactly(len(PAYLOAD))

    try:
        return [await _measure("asyncio TCP echo", call, server_pid, calls, gap) for gap in gaps]
    finally:
        writer.close()


def run(calls: int, gap_ms: float) -> list[dict]:
    """Both echo kinds, back to back and with ``gap_ms`` between calls."""
    out: list[dict] = []
    for kind, rounds in (("grpc", _grpc_rounds), ("tcp", _tcp_rounds)):
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "reliability.call_floor", "--serve", kind, "--port", str(port)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            if server.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the {kind} echo server did not start")
            out += asyncio.run(rounds(port, server.pid, calls, [0.0, gap_ms]))
        finally:
            server.kill()
            server.wait()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per mode")
    parser.add_argument("--gap-ms", type=float, default=10.0, help="idle time between the calls of the paced mode")
    parser.add_argument("--serve", choices=("grpc", "tcp"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run((_serve_grpc if args.serve == "grpc" else _serve_tcp)(args.port))
        return
    for line in run(args.calls, args.gap_ms):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
