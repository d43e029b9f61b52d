"""SASL/PLAIN authentication on a real secured cluster: who gets in, who does not, how fast a refusal comes, and
that no password ever shows up in an error or a server log."""

from __future__ import annotations

import asyncio
import time

import grpc
import pyarrow as pa
import pytest

import fluss
from fluss import ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.sasl import SASL_PLAIN_METADATA_KEY, plain_token

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _channel(cluster, port: int, tls: bool = True) -> grpc.aio.Channel:
    """A raw channel to a port of the secured cluster (its CLIENT and INTERNAL listeners are TLS)."""
    if not tls:
        return grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    return grpc.aio.secure_channel(f"127.0.0.1:{port}", grpc.ssl_channel_credentials(cluster.tls_ca_path.read_bytes()))


async def _refused(connect_as, user, password=None, **kw) -> tuple[FlussError, float]:
    start = time.monotonic()
    with pytest.raises(FlussError) as err:
        await connect_as(user, password, **kw)
    return err.value, time.monotonic() - start


async def test_users_of_the_jaas_config_get_in_and_data_flows_over_replicated_tables(as_admin, as_alice):
    admin = as_admin.get_admin()
    await admin.create_database("auth_db", ignore_if_exists=True)
    path = TablePath("auth_db", "events")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("id", pa.int64()), ("v", pa.string())])),
                                                   bucket_count=2), ignore_if_exists=True)
    table = await as_admin.get_table(path)
    writer = table.new_append().create_writer()
    for i in range(100):
        writer.append({"id": i, "v": f"v{i}"})
    await writer.flush()  # acks=all over replication factor 2: followers fetch through the internal SASL listener
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
    seen: list = []
    deadline = time.monotonic() + 15
    while len(seen) < 100 and time.monotonic() < deadline:
        seen.extend(await scanner.poll(300))
    assert sorted(r.row["id"] for r in seen) == list(range(100))
    nodes = await as_alice.get_admin().get_server_nodes()  # alice is authenticated (no ACL needed for this)
    assert len([n for n in nodes if n.server_type == "TabletServer"]) == 2


async def test_clients_of_the_sasl_listener_are_sent_to_the_sasl_listeners_of_other_servers(secured_cluster, as_admin):
    nodes = await as_admin.get_admin().get_server_nodes()
    sasl_ports = {p.sasl_port for p in secured_cluster._tablets.values()} | {
        c.sasl_port for c in secured_cluster._coordinators}
    assert {n.port for n in nodes} <= sasl_ports


async def test_wrong_password_and_unknown_user_fail_fast_with_the_same_answer(connect_as):
    wrong, took = await _refused(connect_as, "alice", "not-her-password")
    unknown, took2 = await _refused(connect_as, "mallory", "whatever-secret")
    for err, seconds in ((wrong, took), (unknown, took2)):
        assert err.error_code == ErrorCode.AUTHENTICATE_EXCEPTION
        assert "invalid username or password" in err.message
        assert seconds < 3
    assert "not-her-password" not in str(wrong) and "whatever-secret" not in str(unknown)


async def test_a_plaintext_client_on_the_sasl_listener_is_told_to_authenticate(secured_cluster):
    start = time.monotonic()
    with pytest.raises(FlussError) as err:
        await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": secured_cluster.sasl_bootstrap_servers,
                                                         **secured_cluster.tls_config()}))
    assert err.value.error_code == ErrorCode.AUTHENTICATE_EXCEPTION
    assert "requires SASL authentication" in err.value.message and time.monotonic() - start < 3


async def test_a_sasl_client_on_the_plaintext_listener_is_told_the_listener_is_plaintext(secured_cluster):
    config = {**secured_cluster.sasl_config("alice"), "bootstrap.servers": secured_cluster.bootstrap_servers,
              "client.security.ssl.enabled": "false"}
    with pytest.raises(FlussError) as err:
        await fluss.FlussConnection.create(fluss.Config(config))
    assert err.value.error_code == ErrorCode.AUTHENTICATE_EXCEPTION
    assert "is PLAINTEXT" in err.value.message


async def test_official_and_unprefixed_client_keys_and_the_jaas_form_are_accepted(secured_cluster):
    base = {"bootstrap.servers": secured_cluster.sasl_bootstrap_servers, **secured_cluster.tls_config()}
    for extra in ({"security.protocol": "sasl", "security.sasl.mechanism": "PLAIN",
                   "security.sasl.username": "bob", "security.sasl.password": "bob-secret"},
                  {"client.security.protocol": "SASL", "client.security.sasl.jaas.config":
                   'org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required username="bob" '
                   'password="bob-secret";'}):
        conn = await fluss.FlussConnection.create(fluss.Config({**base, **extra}))
        assert await conn.get_admin().get_server_nodes()
        await conn.aclose()


async def test_incomplete_client_settings_are_refused_before_connecting(secured_cluster):
    for props, needle in (({"client.security.protocol": "SASL"}, "client.security.sasl.username"),
                          ({"client.security.protocol": "SSL"}, "Unsupported client.security.protocol"),
                          ({"client.security.protocol": "SASL", "client.security.sasl.mechanism": "SCRAM-SHA-256",
                            "client.security.sasl.username": "a", "client.security.sasl.password": "b"},
                           "Unsupported client.security.sasl.mechanism")):
        with pytest.raises(FlussError) as err:
            await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": "127.0.0.1:1", **props}))
        assert err.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION and needle in err.value.message
    shown = repr(fluss.Config(secured_cluster.sasl_config("alice")))
    assert "alice-secret" not in shown and "******" in shown


async def test_a_client_cannot_call_server_to_server_apis_even_as_a_super_user(secured_cluster):
    token = plain_token("admin", "admin-secret")
    tablet = next(iter(secured_cluster._tablets.values()))
    for port, metadata in ((tablet.sasl_port, ((SASL_PLAIN_METADATA_KEY, token),)), (tablet.port, ())):
        async with _channel(secured_cluster, port, tls=port != tablet.port) as ch:
            stub = rpc.TabletServiceStub(ch)
            resp = await stub.StopReplica(pb.StopReplicaRequest(coordinator_epoch=10**6), metadata=metadata)
            assert resp.error.code == ErrorCode.AUTHORIZATION_EXCEPTION, resp
            assert "server-to-server" in resp.error.message
            fetch = await stub.FetchLog(pb.FetchLogRequest(follower_id=0, max_bytes=1024), metadata=metadata)
            assert fetch.error.code == ErrorCode.AUTHORIZATION_EXCEPTION
    coordinator = secured_cluster._coordinators[0]
    async with _channel(secured_cluster, coordinator.sasl_port) as ch:
        stub = rpc.CoordinatorServiceStub(ch)
        # every control RPC a tablet server sends the coordinator (issue 12's epoch checks come after this door)
        for method, request in (("ControlledShutdown", pb.ControlledShutdownRequest(server_id=0)),
                                ("AdjustIsr", pb.AdjustIsrRequest(server_id=0)),
                                ("CommitKvSnapshot", pb.CommitKvSnapshotRequest(server_id=0)),
                                ("ReportStorageState", pb.ReportStorageStateRequest(server_id=0, writable=False)),
                                ("GetKvSnapshot", pb.GetKvSnapshotRequest()),
                                # the tiered log's manifest commits (a forged one would replace a bucket's
                                # remote log) and reads
                                ("CommitRemoteLogManifest", pb.CommitRemoteLogManifestRequest(server_id=0)),
                                ("GetRemoteLogManifest", pb.GetRemoteLogManifestRequest())):
            resp = await getattr(stub, method)(request, metadata=((SASL_PLAIN_METADATA_KEY, token),))
            assert resp.error.code == ErrorCode.AUTHORIZATION_EXCEPTION, (method, resp)
    # the internal listener wants the servers' own credentials: a user of the client listener is not one
    async with _channel(secured_cluster, tablet.internal_port) as ch:
        resp = await rpc.TabletServiceStub(ch).StopReplica(pb.StopReplicaRequest(),
                                                           metadata=((SASL_PLAIN_METADATA_KEY, token),))
        assert resp.error.code == ErrorCode.AUTHENTICATE_EXCEPTION


async def test_ten_thousand_bad_attempts_neither_slow_nor_crash_a_server_and_are_counted(secured_cluster, as_admin):
    coordinator = secured_cluster._coordinators[0]
    admin = as_admin.get_admin()

    async def good_latency_ms(n: int = 50) -> float:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            await admin.get_server_nodes()
            times.append((time.perf_counter() - start) * 1000)
        return sorted(times)[n // 2]

    before = await good_latency_ms()
    bad = ((SASL_PLAIN_METADATA_KEY, plain_token("admin", "guess")),)
    refused = 0
    async with _channel(secured_cluster, coordinator.sasl_port) as ch:
        stub = rpc.AdminServiceStub(ch)

        async def attempt() -> int:
            resp = await stub.GetServerNodes(pb.GetServerNodesRequest(), metadata=bad)
            return resp.error.code == ErrorCode.AUTHENTICATE_EXCEPTION

        for _ in range(20):
            refused += sum(await asyncio.gather(*(attempt() for _ in range(500))))
        assert refused == 10_000
        after = await good_latency_ms()
        assert coordinator.alive()
        assert after < max(3 * before, before + 5), (before, after)
        # the failures are counted, and reported rate-limited in the server log with the running total
        log_path = secured_cluster.log_dir() / f"{coordinator.name}.log"
        deadline = time.monotonic() + 15
        total = 0
        while time.monotonic() < deadline and total < 10_000:
            await attempt()
            for line in log_path.read_text().splitlines():
                if "authentication failed on listener CLIENT" in line and "failures since start" in line:
                    total = max(total, int(line.split("(")[-2].split()[0]) if "similar" in line
                                else int(line.rsplit("(", 1)[1].split()[0]))
            await asyncio.sleep(0.5)
    assert total >= 10_000
    text = log_path.read_text()
    assert "guess" not in text and "admin-secret" not in text
