"""The one server builder and channel factory: a real grpc.aio server on loopback, its interceptor chain, and the
error door that keeps raw exception text off the wire."""

from __future__ import annotations

import logging

import grpc
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.channels import ChannelFactory, ChannelPool
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.interceptors import (
    ErrorDoor,
    InterceptorChain,
    RequestLogging,
    RequestMetrics,
    RequestStats,
    UnaryInterceptor,
    _call,
    awaitable_handler,
    chained,
    current_request,
)
from fluss.rpc.listeners import Listener, parse_listeners
from fluss.rpc.server import RpcServerBuilder

SECRET = "/var/lib/fluss/secret-dir/bucket-0"


class _Admin(rpc.AdminServiceServicer):
    """ListDatabases answers; DatabaseExists fails as a bug would; DropDatabase raises a FlussError."""

    def __init__(self) -> None:
        self.seen_requests: list[str] = []

    async def ListDatabases(self, request, context):
        info = current_request()
        self.seen_requests.append(f"{info.api}@{info.listener}")
        return pb.ListDatabasesResponse(database_names=["fluss"])

    async def DatabaseExists(self, request, context):
        raise RuntimeError(f"cannot open {SECRET}")

    async def DropDatabase(self, request, context):
        raise FlussError(f"Database '{request.database_name}' does not exist", ErrorCode.DATABASE_NOT_EXIST)


class _Tablet(rpc.TabletServiceServicer):
    async def ProduceLog(self, request, context):
        raise KeyError(SECRET)


class _Tagging(UnaryInterceptor):
    """A stand-in for an authentication interceptor: it knows its listener and sees every request."""

    def __init__(self, listener: Listener, seen: list[str]) -> None:
        super().__init__()
        self.listener = listener
        self.seen = seen

    def wrap(self, method, handler):
        inner = handler.unary_unary

        async def behavior(request, context):
            self.seen.append(f"{self.listener.name}:{method.rsplit('/', 1)[-1]}")
            return await _call(inner, request, context)

        return grpc.unary_unary_rpc_method_handler(behavior, request_deserializer=handler.request_deserializer,
                                                   response_serializer=handler.response_serializer)


@pytest.fixture
async def server():
    seen: list[str] = []
    admin = _Admin()
    built = (RpcServerBuilder(parse_listeners("CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0", "bind.listeners"))
             .add_service(rpc.add_AdminServiceServicer_to_server, admin)
             .add_service(rpc.add_TabletServiceServicer_to_server, _Tablet())
             .add_interceptor(lambda listener: _Tagging(listener, seen))
             .build())
    await built.start()
    pool = ChannelPool(ChannelFactory(connect_timeout_s=5))
    yield built, pool, admin, seen
    await pool.close()
    await built.stop(0)


async def test_every_listener_serves_with_its_own_interceptor_chain(server):
    built, pool, admin, seen = server
    assert set(built.ports) == {"CLIENT", "INTERNAL"} and all(p > 0 for p in built.ports.values())
    for listener in built.listeners:
        await pool.wait_ready(listener.address)
        resp = await pool.admin(listener.address).ListDatabases(pb.ListDatabasesRequest())
        assert list(resp.database_names) == ["fluss"]
    assert seen == ["CLIENT:ListDatabases", "INTERNAL:ListDatabases"]
    assert admin.seen_requests == ["ListDatabases@CLIENT", "ListDatabases@INTERNAL"]
    stats = built.stats.snapshot()["ListDatabases"]
    assert stats.requests == 2 and stats.errors == 0 and stats.max_ms > 0 and sum(stats.histogram) == 2


class _Passing(grpc.aio.ServerInterceptor):
    """Not a UnaryInterceptor: whatever it does in ``intercept_service`` stays its own step of the chain."""

    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    async def intercept_service(self, continuation, details):
        self.seen.append("passing")
        return await continuation(details)


async def test_unary_interceptors_run_as_one_chain_outermost_first():
    seen: list[str] = []
    first, second, third = (_Tagging(Listener(name, "127.0.0.1", 0), seen) for name in ("first", "second", "third"))
    passing = _Passing(seen)
    merged = chained([first, second, passing, third])
    assert [type(i) for i in merged] == [InterceptorChain, _Passing, _Tagging]
    assert merged[0].interceptors == [first, second] and merged[2] is third
    built = (RpcServerBuilder(parse_listeners("CLIENT://127.0.0.1:0", "bind.listeners"))
             .add_service(rpc.add_AdminServiceServicer_to_server, _Admin())
             .add_interceptor(lambda _listener: first).add_interceptor(lambda _listener: second)
             .add_interceptor(lambda _listener: passing).add_interceptor(lambda _listener: third)
             .build())
    await built.start()
    pool = ChannelPool(ChannelFactory(connect_timeout_s=5))
    try:
        address = built.listeners[0].address
        await pool.wait_ready(address)
        for _ in range(2):  # the second request takes the cached handlers
            resp = await pool.admin(address).ListDatabases(pb.ListDatabasesRequest())
            assert list(resp.database_names) == ["fluss"]
        failed = await pool.admin(address).DropDatabase(pb.DropDatabaseRequest(database_name="nope"))
        assert failed.error.code == ErrorCode.DATABASE_NOT_EXIST  # the error door is still the outermost step
    finally:
        await pool.close()
        await built.stop(0)
    calls = [s for s in seen if s != "passing"]
    assert calls == [f"{n}:{api}" for api in ("ListDatabases", "ListDatabases", "DropDatabase")
                     for n in ("first", "second", "third")]
    assert seen.count("passing") >= 3
    stats = built.stats.snapshot()
    assert stats["ListDatabases"].requests == 2 and stats["DropDatabase"].errors == 1


async def test_internal_errors_reach_the_client_as_unknown_server_error_with_a_request_id(server, caplog):
    built, pool, _, _ = server
    address = built.listeners[0].address
    with caplog.at_level(logging.ERROR, logger="fluss.rpc.requests"):
        resp = await pool.admin(address).DatabaseExists(pb.DatabaseExistsRequest(database_name="x"))
        produced = await pool.tablet(address).ProduceLog(pb.ProduceLogRequest(table_id=1))
    assert resp.error.code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "DatabaseExists" in resp.error.message and "request id" in resp.error.message
    assert SECRET not in resp.error.message and "RuntimeError" not in resp.error.message
    assert produced.error.code == ErrorCode.UNKNOWN_SERVER_ERROR and SECRET not in produced.error.message
    request_id = resp.error.message.split("request id ")[1].split(")")[0]
    logged = [r for r in caplog.records if request_id in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # the stack stays on the server, under the request id
    assert built.stats.snapshot()["DatabaseExists"].errors == 1


async def test_a_fluss_error_travels_with_its_code_and_message(server):
    built, pool, _, _ = server
    resp = await pool.admin(built.listeners[0].address).DropDatabase(pb.DropDatabaseRequest(database_name="gone"))
    assert resp.error.code == ErrorCode.DATABASE_NOT_EXIST and resp.error.message == "Database 'gone' does not exist"


async def test_undecodable_bodies_get_corrupt_message_and_one_concise_log_line(server, caplog):
    built, pool, _, _ = server
    address = built.listeners[0].address
    raw = pool.channel(address).unary_unary("/fluss.rpc.TabletService/ProduceLog",
                                            response_deserializer=pb.ProduceLogResponse.FromString)
    with caplog.at_level(logging.DEBUG):
        for _ in range(30):
            resp = await raw(b"\xff\xff\xff\xff garbage")
            assert resp.error.code == ErrorCode.CORRUPT_MESSAGE
            assert "not a valid ProduceLog request" in resp.error.message
    # only the RPC layer's records: in the whole suite, other clients of the session log warnings meanwhile
    records = [r for r in caplog.records if r.name.startswith("fluss.rpc")]
    assert not any(r.exc_info for r in records), "no traceback for a client's garbage"
    warnings = [r for r in records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "undecodable ProduceLog request" in warnings[0].getMessage()


async def test_requests_are_logged_at_debug_with_api_and_request_id(server, caplog):
    built, pool, _, _ = server
    with caplog.at_level(logging.DEBUG, logger="fluss.rpc.requests"):
        await pool.admin(built.listeners[1].address).ListDatabases(pb.ListDatabasesRequest())
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any(line.startswith("ListDatabases from ") and "on INTERNAL" in line and "NONE" in line
               and "request id" in line for line in lines), lines


async def test_connect_deadline_fails_fast_on_a_dead_address():
    pool = ChannelPool(ChannelFactory(connect_timeout_s=0.5))
    try:
        with pytest.raises(FlussError) as e:
            await pool.wait_ready("127.0.0.1:1")
        assert e.value.error_code == ErrorCode.NETWORK_EXCEPTION and "127.0.0.1:1" in e.value.message
    finally:
        await pool.close()


def test_listeners_are_parsed_with_names():
    assert parse_listeners("FLUSS://127.0.0.1:9123", "k") == [Listener("FLUSS", "127.0.0.1", 9123)]
    assert parse_listeners("127.0.0.1:9", "k")[0].name == "FLUSS"
    for bad in ("FLUSS://nohost", "A://h:1,A://h:2", ""):
        with pytest.raises(FlussError) as e:
            parse_listeners(bad, "bind.listeners")
        assert "bind.listeners" in e.value.message


async def test_awaitable_handler_awaits_coroutine_functions_directly_and_adapts_the_others():
    async def coroutine_behavior(request, context):
        return ("async", request)

    def plain_behavior(request, context):
        return ("plain", request)

    def returns_awaitable(request, context):
        return coroutine_behavior(request, context)

    assert awaitable_handler(coroutine_behavior) is coroutine_behavior  # no coroutine more per layer and request
    assert await awaitable_handler(plain_behavior)(1, None) == ("plain", 1)
    assert await awaitable_handler(returns_awaitable)(2, None) == ("async", 2)


class _Context:
    def invocation_metadata(self):
        return ()

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"


async def test_the_shipped_chain_serves_a_plain_handler_and_keeps_its_error_mapping():
    """A servicer method that is not a coroutine function still runs under every shipped interceptor."""
    listener = Listener("CLIENT", "127.0.0.1", 0)
    stats = RequestStats()
    chain = InterceptorChain([ErrorDoor(listener), RequestMetrics(stats), RequestLogging(listener)])

    def plain(request, context):
        if request.database_name == "bad":
            raise FlussError("no such database", ErrorCode.DATABASE_NOT_EXIST)
        return pb.DropDatabaseResponse()

    handler = grpc.unary_unary_rpc_method_handler(
        plain, request_deserializer=pb.DropDatabaseRequest.FromString,
        response_serializer=pb.DropDatabaseResponse.SerializeToString)
    wrapped = chain.wrap("/fluss.rpc.AdminService/DropDatabase", handler)
    assert (await wrapped.unary_unary(pb.DropDatabaseRequest(database_name="ok"), _Context())).error.code == 0
    failed = await wrapped.unary_unary(pb.DropDatabaseRequest(database_name="bad"), _Context())
    assert (failed.error.code, failed.error.message) == (ErrorCode.DATABASE_NOT_EXIST, "no such database")
    assert stats.snapshot()["DropDatabase"].requests == 2 and stats.snapshot()["DropDatabase"].errors == 1
