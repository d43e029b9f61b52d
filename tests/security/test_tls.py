"""TLS with a CA made at test time: on the session's secured cluster (SASL over TLS on the CLIENT listener,
replication and coordinator calls over the TLS INTERNAL listener) and on a bare gRPC server for mutual TLS.
Every mismatch - a plaintext client at a TLS listener, a TLS client at a plaintext one, an untrusted CA, a
missing client certificate - fails fast with a FlussError that says what to fix."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.client.cluster_client import ClusterClient
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.listeners import Listener
from fluss.rpc.server import RpcServerBuilder
from fluss.server.security.self_signed import SelfSignedCa
from fluss.server.security.settings import SecuritySettings

pytestmark = pytest.mark.asyncio(loop_scope="session")

FAST_S = 3.0


async def _refused(config: dict[str, str]) -> tuple[FlussError, float]:
    start = time.monotonic()
    with pytest.raises(FlussError) as err:
        conn = await fluss.FlussConnection.create(fluss.Config(config))
        await conn.aclose()
    return err.value, time.monotonic() - start


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory) -> SelfSignedCa:
    """A CA the cluster knows nothing about."""
    return SelfSignedCa.create(tmp_path_factory.mktemp("other-ca") / "ca", common_name="someone-elses-ca")


async def test_sasl_over_tls_writes_and_reads_with_replication_over_the_tls_internal_listener(secured_cluster,
                                                                                              as_admin):
    admin = as_admin.get_admin()
    await admin.create_database("tls_db", ignore_if_exists=True)
    path = TablePath("tls_db", "kv")
    schema = Schema(pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"])
    await admin.create_table(path, TableDescriptor(schema, bucket_count=2), ignore_if_exists=True)
    table = await as_admin.get_table(path)
    writer = table.new_upsert().create_writer()
    for i in range(50):
        writer.upsert({"id": i, "v": f"v{i}"})
    await writer.flush()  # acks=all, replication factor 2: the followers fetch over the TLS internal listener
    lookuper = table.new_lookup().create_lookuper()
    assert (await lookuper.lookup({"id": 7}))["v"] == "v7"
    config = secured_cluster.server_config  # the servers' own TLS settings are in their YAML files
    assert "security.ssl.listeners" not in config
    yaml_text = (secured_cluster.dir / "tablet-server-0.yaml").read_text()
    assert "security.ssl.listeners: CLIENT,INTERNAL" in yaml_text


async def test_a_plaintext_client_at_a_tls_listener_fails_fast_saying_so(secured_cluster):
    config = {**secured_cluster.sasl_config("alice"), "client.security.ssl.enabled": "false"}
    err, took = await _refused(config)
    assert err.error_code == ErrorCode.AUTHENTICATE_EXCEPTION, err
    assert "a TLS listener?" in err.message and took < FAST_S


async def test_a_tls_client_at_a_plaintext_listener_fails_fast_saying_so(secured_cluster):
    config = {**secured_cluster.sasl_config("alice"), "bootstrap.servers": secured_cluster.bootstrap_servers}
    err, took = await _refused(config)
    assert err.error_code == ErrorCode.AUTHENTICATE_EXCEPTION, err
    assert "does not speak TLS" in err.message and took < FAST_S


async def test_a_client_that_does_not_trust_the_servers_ca_fails_fast(secured_cluster, other_ca):
    config = {**secured_cluster.sasl_config("alice"), "client.security.ssl.truststore.path": str(other_ca.cert_path)}
    err, took = await _refused(config)
    assert err.error_code == ErrorCode.AUTHENTICATE_EXCEPTION, err
    assert "TLS handshake failed" in err.message and "truststore" in err.message and took < FAST_S
    # without a trust store the system's roots are used: they do not know the cluster's CA either
    config.pop("client.security.ssl.truststore.path")
    err, took = await _refused(config)
    assert err.error_code == ErrorCode.AUTHENTICATE_EXCEPTION and took < FAST_S


async def test_unreadable_tls_files_are_refused_before_connecting(secured_cluster, tmp_path):
    not_pem = tmp_path / "ca.txt"
    not_pem.write_text("hello")
    for extra, needle in (({"client.security.ssl.truststore.path": str(tmp_path / "missing.crt")},
                           "'client.security.ssl.truststore.path' names"),
                          ({"client.security.ssl.truststore.path": str(not_pem)}, "holds no PEM certificate"),
                          ({"client.security.ssl.certificate.path": str(secured_cluster.tls_ca_path)},
                           "'client.security.ssl.key.path'")):
        err, took = await _refused({**secured_cluster.sasl_config("alice"), **extra})
        assert err.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION and needle in err.message, err
        assert took < 1


async def test_server_tls_settings_are_checked_naming_the_key(tmp_path):
    ca = SelfSignedCa.create(tmp_path / "ca")
    server = ca.issue(tmp_path / "server", ["127.0.0.1"])
    listeners = [Listener("CLIENT", "127.0.0.1", 1), Listener("INTERNAL", "127.0.0.1", 2)]
    base = {"internal.listener.name": "INTERNAL", "security.ssl.listeners": "CLIENT,INTERNAL",
            "security.ssl.certificate.path": str(server.cert_path), "security.ssl.key.path": str(server.key_path)}
    ok = SecuritySettings.from_config(base.get, listeners)
    assert ok.of("CLIENT").tls and ok.internal_tls is not None and ok.tls.client_auth == "none"
    for extra, needle in (({"security.ssl.listeners": "CLIENT,EXTERNAL"}, "names listener EXTERNAL"),
                          ({"security.ssl.key.path": None}, "'security.ssl.key.path' is not set"),
                          ({"security.ssl.key.path": str(server.cert_path)}, "holds no PEM private key"),
                          ({"security.ssl.client-auth": "sometimes"}, "'security.ssl.client-auth'"),
                          ({"security.ssl.client-auth": "required"}, "set 'security.ssl.truststore.path'")):
        config = {**base, **extra}
        with pytest.raises(FlussError) as err:
            SecuritySettings.from_config(config.get, listeners)
        assert err.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION and needle in err.value.message


class _Nodes(rpc.AdminServiceServicer):
    async def GetServerNodes(self, request, context):
        return pb.GetServerNodesResponse(nodes=[pb.ServerNodePb(id=0, host="127.0.0.1", port=1,
                                                                server_type="CoordinatorServer")])


@pytest_asyncio.fixture(loop_scope="session")
async def mtls_server(tmp_path_factory):
    """A bare gRPC server on one TLS listener that requires client certificates of its CA."""
    directory: Path = tmp_path_factory.mktemp("mtls")
    ca = SelfSignedCa.create(directory / "ca", common_name="mtls-ca")
    server = ca.issue(directory / "server", ["127.0.0.1"])
    settings = SecuritySettings.from_config({
        "security.ssl.listeners": "CLIENT", "security.ssl.certificate.path": str(server.cert_path),
        "security.ssl.key.path": str(server.key_path), "security.ssl.truststore.path": str(ca.cert_path),
        "security.ssl.client-auth": "required"}.get, [Listener("CLIENT", "127.0.0.1", 0)])
    built = (RpcServerBuilder([Listener("CLIENT", "127.0.0.1", 0)]).add_service(rpc.add_AdminServiceServicer_to_server,
                                                                                 _Nodes())
             .use_tls("CLIENT", settings.tls.server_credentials()).build())
    await built.start()
    yield ca, directory, f"127.0.0.1:{built.ports['CLIENT']}"
    await built.stop(0)


async def test_mutual_tls_needs_a_client_certificate_of_a_trusted_ca(mtls_server, other_ca, tmp_path):
    ca, directory, address = mtls_server
    alice = ca.issue(directory / "alice", hosts=[], common_name="alice")
    base = {"bootstrap.servers": address, "client.security.ssl.enabled": "true",
            "client.security.ssl.truststore.path": str(ca.cert_path)}
    client = ClusterClient(fluss.Config({**base, "client.security.ssl.certificate.path": str(alice.cert_path),
                                         "client.security.ssl.key.path": str(alice.key_path)}))
    resp = await client.admin_call("GetServerNodes", pb.GetServerNodesRequest())
    assert [n.id for n in resp.nodes] == [0]
    await client.channels.close()
    stranger = other_ca.issue(tmp_path / "mallory", hosts=[], common_name="mallory")
    for extra in ({}, {"client.security.ssl.certificate.path": str(stranger.cert_path),
                       "client.security.ssl.key.path": str(stranger.key_path)}):
        client = ClusterClient(fluss.Config({**base, **extra}))
        start = time.monotonic()
        with pytest.raises(FlussError) as err:
            await client.admin_call("GetServerNodes", pb.GetServerNodesRequest())
        await client.channels.close()
        assert err.value.error_code == ErrorCode.AUTHENTICATE_EXCEPTION, err.value
        assert "client certificate" in err.value.message
        assert time.monotonic() - start < FAST_S, err.value
