"""Security settings, JAAS parsing and the ACL model without servers; and a guard that every RPC of the Fluss
services has an access rule (a new API cannot slip past the authorizer unnoticed)."""

from __future__ import annotations

import pytest

from fluss.acl import (
    AclBinding,
    AclBindingFilter,
    OperationType,
    PermissionType,
    Principal,
    Resource,
    ResourceType,
    binding_from_pb,
    binding_to_pb,
    filter_from_pb,
    filter_to_pb,
)
from fluss.errors import ErrorCode, FlussError
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.jaas import parse_jaas_config
from fluss.rpc.sasl import parse_plain_token, plain_token
from fluss.server.config import ServerConfig
from fluss.server.security.access import FILTERED_APIS, INTERNAL_APIS, OPEN_APIS, RULES
from fluss.server.security.authorizer import Authorizer
from fluss.server.security.session import Session

MODULE = "org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required"


def _config(**extra) -> ServerConfig:
    return ServerConfig({"zookeeper.address": "127.0.0.1:2181",
                         "bind.listeners": "CLIENT://127.0.0.1:9124,INTERNAL://127.0.0.1:9125",
                         "internal.listener.name": "INTERNAL", **extra})


def test_jaas_users_and_own_credentials_are_read_with_quotes_and_escapes():
    jaas = parse_jaas_config(f'{MODULE} username="srv" password="p\\"w" user_srv="p\\"w" user_a-b="x y";', "k")
    assert jaas.users == {"srv": 'p"w', "a-b": "x y"}
    assert (jaas.username, jaas.password) == ("srv", 'p"w')
    assert "p\\\"w" not in repr(jaas) and "x y" not in repr(jaas)


@pytest.mark.parametrize("text", ["user_a=\"b\";", f"{MODULE} user_a=b=c", "Module maybe user_a=\"b\";"])
def test_malformed_jaas_names_the_key_never_the_text(text):
    with pytest.raises(FlussError) as err:
        parse_jaas_config(text, "security.sasl.plain.jaas.config")
    assert err.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
    assert "security.sasl.plain.jaas.config" in err.value.message and '"b"' not in err.value.message


def test_a_per_listener_jaas_entry_wins_over_the_global_one():
    s = _config(**{"security.protocol.map": "CLIENT:SASL,INTERNAL:SASL", "internal.listener.name": "INTERNAL",
                   "security.sasl.plain.jaas.config": f'{MODULE} user_alice="a";',
                   "security.sasl.listener.name.internal.plain.jaas.config":
                       f'{MODULE} username="srv" password="s" user_srv="s";'}).security()
    assert s.of("CLIENT").users == {"alice": "a"} and s.of("INTERNAL").users == {"srv": "s"}
    assert s.internal_credentials == ("srv", "s") and str(s.internal_principal) == "User:srv"


@pytest.mark.parametrize("extra, needle", [
    ({"security.protocol.map": "CLIENT:SSL"}, "Unknown security protocol 'SSL'"),
    ({"security.protocol.map": "OTHER:SASL"}, "names listener OTHER, which is not bound"),
    ({"security.protocol.map": "CLIENT"}, "expected LISTENER:PROTOCOL"),
    ({"security.protocol.map": "CLIENT:SASL"}, "neither 'security.sasl.listener.name.client.plain.jaas.config'"),
    ({"security.protocol.map": "CLIENT:SASL", "security.sasl.plain.jaas.config": f"{MODULE} username=\"x\";"},
     "declares no user"),
    ({"security.sasl.enabled.mechanisms": "GSSAPI"}, "Unsupported SASL mechanism 'GSSAPI'"),
    ({"internal.listener.name": "REPLICATION"}, "not one of the bound listeners"),
    ({"security.protocol.map": "INTERNAL:SASL", "internal.listener.name": "INTERNAL",
      "security.sasl.plain.jaas.config": f'{MODULE} user_a="secret-a";'}, "must give the server's own username"),
    ({"security.protocol.map": "INTERNAL:SASL", "internal.listener.name": "INTERNAL",
      "security.sasl.plain.jaas.config": f'{MODULE} username="srv" password="p1" user_srv="p2";'},
     "must also be a user"),
    ({"super.users": "User:"}, "Invalid super.users"),
    ({"authorizer.enabled": "yes"}, "authorizer.enabled"),
])
def test_bad_security_settings_stop_the_start_naming_the_key(extra, needle):
    with pytest.raises(FlussError) as err:
        _config(**extra).check()
    assert err.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
    assert needle in err.value.message, err.value.message
    for secret in ("secret-a", "p1", "p2"):
        assert secret not in err.value.message


def test_plain_tokens_round_trip_and_malformed_ones_are_refused():
    assert parse_plain_token(plain_token("alice", "pa:ss")) == ("alice", "pa:ss")
    for bad in ("%%%", "YWxpY2U=", plain_token("alice", "x").replace("A", "B", 1)):
        with pytest.raises(FlussError):
            parse_plain_token(bad)


def _session(user: str, host: str = "127.0.0.1") -> Session:
    return Session(Principal.user(user), "CLIENT", f"ipv4:{host}:5000")


def _authorizer(*bindings: AclBinding, supers: tuple[str, ...] = ()) -> Authorizer:
    settings = _config(**{"authorizer.enabled": "true", "super.users": ";".join(supers)}).security()
    a = Authorizer(settings)
    a.replace(list(bindings))
    return a


def test_operations_imply_describe_and_grants_flow_down_the_resource_hierarchy():
    a = _authorizer(AclBinding(Resource.database("db"), Principal.user("alice"), OperationType.WRITE))
    alice = _session("alice")
    assert a.authorize(alice, OperationType.WRITE, Resource.table("db", "t"))
    assert a.authorize(alice, OperationType.DESCRIBE, Resource.table("db", "t"))
    assert not a.authorize(alice, OperationType.READ, Resource.table("db", "t"))
    assert not a.authorize(alice, OperationType.WRITE, Resource.table("other", "t"))
    assert not a.authorize(alice, OperationType.DESCRIBE, Resource.cluster())
    assert not a.authorize(_session("bob"), OperationType.DESCRIBE, Resource.table("db", "t"))


def test_all_implies_everything_deny_wins_hosts_match_and_super_users_bypass():
    a = _authorizer(AclBinding(Resource.cluster(), Principal.user("*"), OperationType.ALL),
                    AclBinding(Resource.table("db", "secret"), Principal.user("alice"), OperationType.READ,
                               PermissionType.DENY),
                    AclBinding(Resource.table("db", "t"), Principal.user("carol"), OperationType.READ,
                               host="10.0.0.1"),
                    supers=("User:root",))
    assert a.authorize(_session("alice"), OperationType.DROP, Resource.database("db"))
    assert not a.authorize(_session("alice"), OperationType.READ, Resource.table("db", "secret"))
    assert a.authorize(_session("root"), OperationType.READ, Resource.table("db", "secret"))
    b = _authorizer(AclBinding(Resource.table("db", "t"), Principal.user("carol"), OperationType.READ,
                               host="10.0.0.1"))
    assert b.authorize(_session("carol", "10.0.0.1"), OperationType.READ, Resource.table("db", "t"))
    assert not b.authorize(_session("carol", "10.0.0.2"), OperationType.READ, Resource.table("db", "t"))
    assert b.may_see(_session("carol", "10.0.0.1"), Resource.database("db"))
    assert not b.may_see(_session("dave"), Resource.database("db"))


def test_acl_bindings_and_filters_travel_unchanged():
    b = AclBinding(Resource.table("db", "t"), Principal.user("alice"), OperationType.READ, PermissionType.DENY, "h")
    assert binding_from_pb(binding_to_pb(b)) == b
    f = AclBindingFilter.of("cluster.db", "User:alice", "ANY", None, None)
    assert filter_from_pb(filter_to_pb(f)) == f and f.resource_type is ResourceType.DATABASE
    with pytest.raises(FlussError):
        binding_from_pb(pb.AclPb(resource_type="TABLE", resource_name="db.t", principal="User:a", operation="FLY"))


def test_every_rpc_of_the_fluss_services_has_an_access_rule():
    apis = {m.name for s in pb.DESCRIPTOR.services_by_name.values() for m in s.methods}
    covered = set(RULES) | INTERNAL_APIS | OPEN_APIS | FILTERED_APIS
    assert apis - covered == set(), "add the new API to fluss/server/security/access.py"
    assert covered - apis == set()
