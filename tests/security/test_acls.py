"""ACLs on a real secured cluster: for each kind of RPC, the anonymous (plaintext listener), the wrong principal
and the allowed cases; the admin API to manage ACLs; ACLs reaching every server; listings filtered."""

from __future__ import annotations

import asyncio
import time
import uuid

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import (
    AclBinding,
    AclBindingFilter,
    ErrorCode,
    FlussError,
    OperationType,
    PermissionType,
    Principal,
    Resource,
    Schema,
    TableDescriptor,
    TablePath,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

ALICE = Principal.user("alice")
ROWS = pa.schema([("id", pa.int32()), ("v", pa.string())])


async def _eventually(check, timeout_s: float = 5.0):
    """ACLs reach the tablet servers through a ZooKeeper watch: retry an authorization refusal for a moment."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await check()
        except FlussError as e:
            if e.error_code != ErrorCode.AUTHORIZATION_EXCEPTION or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def _denied(coro, *words: str) -> FlussError:
    with pytest.raises(FlussError) as err:
        await coro
    assert err.value.error_code == ErrorCode.AUTHORIZATION_EXCEPTION, err.value
    for w in words:
        assert w in err.value.message, err.value.message
    return err.value


@pytest_asyncio.fixture(loop_scope="session")
async def db(as_admin):
    name = f"acl_{uuid.uuid4().hex[:6]}"
    admin = as_admin.get_admin()
    await admin.create_database(name)
    yield name
    await admin.drop_acls([AclBindingFilter.of(principal="User:alice"), AclBindingFilter.of(principal="User:*")])
    await admin.drop_database(name, ignore_if_not_exists=True, cascade=True)


async def _log_table(as_admin, db: str, name: str = "t", pk: bool = False) -> TablePath:
    path = TablePath(db, name)
    schema = Schema(ROWS, primary_keys=["id"]) if pk else Schema(ROWS)
    await as_admin.get_admin().create_table(path, TableDescriptor(schema, bucket_count=2))
    return path


async def test_ddl_needs_create_on_the_parent_and_drop_on_the_resource(as_admin, as_alice, as_anonymous, db):
    path = TablePath(db, "made_by_alice")
    desc = TableDescriptor(Schema(ROWS), bucket_count=1)
    await _denied(as_anonymous.get_admin().create_table(path, desc), "User:ANONYMOUS", "CREATE", f"database {db}")
    await _denied(as_alice.get_admin().create_table(path, desc), "User:alice", "CREATE", f"database {db}")
    await _denied(as_alice.get_admin().create_database(f"{db}_x"), "CREATE", "cluster")
    await as_admin.get_admin().create_acls([AclBinding(Resource.database(db), ALICE, OperationType.CREATE)])
    await as_alice.get_admin().create_table(path, desc)
    assert (await as_alice.get_admin().get_table_info(path)).table_path == path  # CREATE implies DESCRIBE
    await _denied(as_alice.get_admin().drop_table(path), "DROP", f"table {db}.made_by_alice")
    await as_admin.get_admin().create_acls([AclBinding(Resource.table(db, "made_by_alice"), ALICE, OperationType.DROP)])
    await as_alice.get_admin().drop_table(path)


async def test_alter_table_needs_alter_on_the_table(as_admin, as_alice, as_anonymous, db):
    path = await _log_table(as_admin, db, "altered")
    change = [fluss.TableChange.set("table.log.ttl", "2h")]
    await _denied(as_anonymous.get_admin().alter_table(path, change), "User:ANONYMOUS", "ALTER",
                  f"table {db}.altered")
    await as_admin.get_admin().create_acls([AclBinding(Resource.table(db, "altered"), ALICE, OperationType.WRITE)])
    await _denied(as_alice.get_admin().alter_table(path, change), "User:alice", "ALTER", f"table {db}.altered")
    await as_admin.get_admin().create_acls([AclBinding(Resource.table(db, "altered"), ALICE, OperationType.ALTER)])
    await as_alice.get_admin().alter_table(path, change)
    info = await as_admin.get_admin().get_table_info(path)
    assert info.descriptor.properties["table.log.ttl"] == "2h"


async def test_reassignment_and_server_tags_need_alter_and_listing_describe_on_the_cluster(as_admin, as_alice, db):
    path = await _log_table(as_admin, db, "moved")
    await as_admin.get_admin().create_acls([AclBinding(Resource.table(db, "moved"), ALICE, OperationType.ALL)])
    await _denied(as_alice.get_admin().alter_table_assignment(path, {0: [0, 1]}), "User:alice", "ALTER", "cluster")
    await _denied(as_alice.get_admin().list_reassignments(), "User:alice", "DESCRIBE", "cluster")
    await _denied(as_alice.get_admin().add_server_tag([0], fluss.ServerTag.TEMPORARY_OFFLINE), "ALTER", "cluster")
    await _denied(as_alice.get_admin().remove_server_tag([0], fluss.ServerTag.TEMPORARY_OFFLINE), "ALTER", "cluster")
    await _denied(as_alice.get_admin().rebalance(), "User:alice", "ALTER", "cluster")
    await _denied(as_alice.get_admin().cancel_rebalance(), "User:alice", "ALTER", "cluster")
    await _denied(as_alice.get_admin().list_rebalance(), "User:alice", "DESCRIBE", "cluster")
    assert await as_admin.get_admin().list_reassignments() == []
    await as_admin.get_admin().create_acls([AclBinding(Resource.cluster(), ALICE, OperationType.ALTER)])
    # the replicas of bucket 0 swap order: the same servers, so nothing to copy, and the move finishes at once
    nodes = await as_alice.get_admin().get_server_nodes()
    assert {n.id for n in nodes if n.server_type == "TabletServer"} == {0, 1}
    await _eventually(lambda: as_alice.get_admin().alter_table_assignment(path, {0: [1, 0]}))
    assert await as_alice.get_admin().list_reassignments() == []  # ALTER implies DESCRIBE
    with pytest.raises(FlussError) as err:  # allowed now: the coordinator answers (server 0 has no tag)
        await as_alice.get_admin().remove_server_tag([0], fluss.ServerTag.TEMPORARY_OFFLINE)
    assert err.value.error_code == ErrorCode.SERVER_TAG_NOT_EXIST_EXCEPTION
    assert await as_alice.get_admin().list_rebalance("rebalance-none") is None
    with pytest.raises(FlussError) as err:  # allowed: nothing to cancel
        await as_alice.get_admin().cancel_rebalance("rebalance-none")
    assert err.value.error_code == ErrorCode.NO_REBALANCE_IN_PROGRESS_EXCEPTION


async def test_writes_need_write_and_reads_need_read_on_the_table(as_admin, as_alice, as_anonymous, db):
    path = await _log_table(as_admin, db)
    # metadata of the table needs DESCRIBE, which READ and WRITE imply
    await _denied(as_alice.get_table(path), "DESCRIBE", f"table {db}.t")
    await _denied(as_anonymous.get_table(path), "User:ANONYMOUS")
    admin = as_admin.get_admin()
    await admin.create_acls([AclBinding(Resource.table(db, "t"), ALICE, OperationType.READ)])
    table = await as_alice.get_table(path)
    writer = table.new_append().create_writer()
    writer.append({"id": 1, "v": "x"})
    await _denied(writer.flush(), "WRITE", f"table {db}.t")

    await admin.create_acls([AclBinding(Resource.table(db, "t"), ALICE, OperationType.WRITE)])

    async def write():
        w = table.new_append().create_writer()
        w.append({"id": 2, "v": "y"})
        await w.flush()

    await _eventually(write)
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
    got: list = []
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        got.extend(await scanner.poll(200))
    assert [r.row["id"] for r in got] == [2]

    # drop READ: the same principal can no longer fetch (WRITE alone does not allow reading)
    dropped = await admin.drop_acls([AclBindingFilter.of(f"cluster.{db}.t", "User:alice", "READ")])
    assert [str(b.operation.name) for b in dropped] == ["READ"]
    reader = await table.new_scan().create_log_scanner()
    reader.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})

    async def poll_until_refused():
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            await reader.poll(100)
            await asyncio.sleep(0.05)

    await _denied(poll_until_refused(), "READ", f"table {db}.t")


async def test_lookups_need_read_and_upserts_write_on_primary_key_tables(as_admin, as_alice, db):
    path = await _log_table(as_admin, db, "kv", pk=True)
    admin = as_admin.get_admin()
    writer = (await as_admin.get_table(path)).new_upsert().create_writer()
    writer.upsert({"id": 1, "v": "one"})
    await writer.flush()
    await admin.create_acls([AclBinding(Resource.table(db, "kv"), ALICE, OperationType.WRITE)])
    table = await _eventually(lambda: as_alice.get_table(path))
    await _denied(table.new_lookup().create_lookuper().lookup({"id": 1}), "READ", f"table {db}.kv")
    await admin.create_acls([AclBinding(Resource.database(db), ALICE, OperationType.READ)])  # via the database
    assert await _eventually(lambda: table.new_lookup().create_lookuper().lookup({"id": 1})) == {"id": 1, "v": "one"}


async def test_listings_show_only_what_the_principal_may_describe(as_admin, as_alice, db):
    await _log_table(as_admin, db, "visible")
    await _log_table(as_admin, db, "hidden")
    alice = as_alice.get_admin()
    assert db not in await alice.list_databases()
    assert not await alice.database_exists(db)
    assert not await alice.table_exists(TablePath(db, "visible"))
    await as_admin.get_admin().create_acls([AclBinding(Resource.table(db, "visible"), ALICE, OperationType.READ)])
    assert db in await alice.list_databases()
    assert await alice.list_tables(db) == ["visible"]
    assert await alice.table_exists(TablePath(db, "visible"))
    assert not await alice.table_exists(TablePath(db, "hidden"))
    assert "fluss" in await as_admin.get_admin().list_databases()


async def test_deny_wins_over_allow_and_wildcard_principals_match_every_user(as_admin, as_alice, connect_as, db):
    path = await _log_table(as_admin, db, "shared")
    admin = as_admin.get_admin()
    await admin.create_acls([AclBinding(Resource.database(db), Principal.user("*"), OperationType.DESCRIBE)])
    bob = await connect_as("bob")
    try:
        assert (await bob.get_admin().get_table_info(path)).table_path == path
        await admin.create_acls([AclBinding(Resource.table(db, "shared"), ALICE, OperationType.ALL,
                                            PermissionType.DENY)])
        await _denied(as_alice.get_admin().get_table_info(path), "DESCRIBE")
        assert (await bob.get_admin().get_table_info(path)).table_path == path
    finally:
        await bob.aclose()


async def test_managing_acls_needs_all_on_the_resource_and_listing_shows_what_one_may_describe(as_admin, as_alice, db):
    grant = AclBinding(Resource.table(db, "x"), Principal.user("bob"), OperationType.READ)
    await _denied(as_alice.get_admin().create_acls([grant]), "ALL", f"database {db}")
    await _denied(as_alice.get_admin().drop_acls([AclBindingFilter.any()]), "ALL", "cluster")
    admin = as_admin.get_admin()
    await admin.create_acls([grant, grant])  # the same ACL twice is stored once
    await admin.create_acls([AclBinding(Resource.database(db), ALICE, OperationType.ALL)])
    mine = await as_alice.get_admin().list_acls(AclBindingFilter.of(f"cluster.{db}.x"))
    assert mine == [grant]
    await as_alice.get_admin().create_acls([AclBinding(Resource.table(db, "y"), Principal.user("bob"),
                                                       OperationType.WRITE)])  # ALL on the database suffices
    listed = await admin.list_acls(AclBindingFilter.of(principal="User:bob"))
    assert {(b.resource.name, b.operation) for b in listed} == {(f"{db}.x", OperationType.READ),
                                                                 (f"{db}.y", OperationType.WRITE)}
    dropped = await admin.drop_acls([AclBindingFilter.of(principal="User:bob")])
    assert len(dropped) == 2 and await admin.list_acls(AclBindingFilter.of(principal="User:bob")) == []


async def test_bad_acls_are_refused_with_a_clear_message(as_admin):
    admin = as_admin.get_admin()
    with pytest.raises(FlussError) as err:
        await admin.create_acls([AclBinding(Resource.cluster(), ALICE, OperationType.ANY)])
    assert "ANY is for filters only" in err.value.message
    with pytest.raises(FlussError) as err:
        Resource.parse("cluster.a.b.c")
    assert "Invalid resource" in err.value.message


async def test_acl_api_on_a_cluster_without_authorizer_says_security_is_disabled(admin):
    with pytest.raises(FlussError) as err:
        await admin.list_acls()
    assert err.value.error_code == ErrorCode.SECURITY_DISABLED_EXCEPTION


async def test_cluster_configs_need_alter_and_describing_them_describe_on_the_cluster(as_admin, as_anonymous):
    await _denied(as_anonymous.get_admin().describe_cluster_configs(), "User:ANONYMOUS", "DESCRIBE", "cluster")
    await _denied(as_anonymous.get_admin().alter_cluster_configs(
        [fluss.AlterConfig("kv.snapshot.interval", "1min")]), "User:ANONYMOUS", "ALTER", "cluster")
    entries = {e.key: e for e in await as_admin.get_admin().describe_cluster_configs()}
    assert entries["kv.snapshot.interval"].source == "DEFAULT_CONFIG"
    # secrets of the servers' configuration are never shown
    assert entries["security.sasl.listener.name.client.plain.jaas.config"].value == "******"
    with pytest.raises(FlussError) as err:  # allowed: the coordinator checks the change itself
        await as_admin.get_admin().alter_cluster_configs([fluss.AlterConfig("super.users", "User:alice")])
    assert err.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION and "super.users" in err.value.message
