"""The Java connector on a secured cluster (SASL over TLS): Fluss's client security options in a catalog and in a
table's ``WITH (...)``, Fluss's ACL procedures (``CALL cat.sys.add_acl / list_acl / drop_acl``) and rebalance
procedures (``sys.rebalance / list_rebalance / cancel_rebalance / add_server_tag / remove_server_tag``), a wrong password
and TLS mismatches failing CREATE CATALOG with the reason, and ACLs applying to Flink jobs."""

from __future__ import annotations

import uuid

import pytest

import fluss

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _tls(cluster) -> str:
    return (f"'client.security.ssl.enabled'='true', "
            f"'client.security.ssl.truststore.path'='{cluster.tls_ca_path}'")


def _sasl(cluster, user: str, password: str | None = None) -> str:
    """SASL/PLAIN over TLS (the secured cluster's CLIENT listener)."""
    return (f"'bootstrap.servers'='{cluster.sasl_bootstrap_servers}', 'client.security.protocol'='SASL', "
            f"'client.security.sasl.mechanism'='PLAIN', 'client.security.sasl.username'='{user}', "
            f"'client.security.sasl.password'='{password or cluster.sasl_users[user]}', {_tls(cluster)}")


def _batch_env(connector):
    from pyflink.table import EnvironmentSettings, TableEnvironment

    from fluss.flink import add_connector_jars

    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.get_config().set("rest.bind-port", "0")
    t_env.get_config().set("restart-strategy.type", "none")  # a refused write fails the job at once
    add_connector_jars(t_env)
    return t_env


def _rows(result) -> list[tuple]:
    with result.collect() as it:
        return sorted(tuple(r) for r in it)


async def test_a_sasl_catalog_writes_and_reads_and_acls_apply_to_flink_jobs(connector, secured_cluster):
    t_env = _batch_env(connector)
    db = f"flink_sec_{uuid.uuid4().hex[:6]}"
    t_env.execute_sql(f"CREATE CATALOG sec_admin WITH ('type'='fluss', {_sasl(secured_cluster, 'admin')})").wait()
    t_env.execute_sql(f"CREATE DATABASE sec_admin.{db}").wait()
    t_env.execute_sql(f"CREATE TABLE sec_admin.{db}.t (id INT, v STRING) WITH ('bucket.num'='2')").wait()
    t_env.execute_sql(f"INSERT INTO sec_admin.{db}.t VALUES (1, 'a'), (2, 'b')").wait()

    # alice has no ACL: her catalog connects (she is authenticated) but does not even see the database
    t_env.execute_sql(f"CREATE CATALOG sec_alice WITH ('type'='fluss', {_sasl(secured_cluster, 'alice')})").wait()
    with pytest.raises(Exception) as err:
        _rows(t_env.execute_sql(f"SELECT * FROM sec_alice.{db}.t"))
    assert f"Object '{db}' not found within 'sec_alice'" in str(err.value), str(err.value)[-2000:]
    admin_conn = await fluss.FlussConnection.create(fluss.Config(secured_cluster.sasl_config("admin")))
    try:
        # Fluss's ACL procedures, by name and by position; alice may not grant herself anything
        granted = _rows(t_env.execute_sql(
            f"CALL sec_admin.sys.add_acl(resource => 'cluster.{db}', permission => 'ALLOW', "
            f"principal => 'User:alice', operation => 'READ')"))
        assert granted == [(f'resource="cluster.{db}";permission="ALLOW";principal="User:alice";operation="READ";'
                            f'host="*"',)]
        t_env.execute_sql(f"CALL sec_admin.sys.add_acl('cluster.{db}.t', 'ALLOW', 'User:bob', 'WRITE', '*')").wait()
        listed = _rows(t_env.execute_sql("CALL sec_admin.sys.list_acl(resource => 'ANY', principal => 'User:bob')"))
        assert listed == [(f'resource="cluster.{db}.t";permission="ALLOW";principal="User:bob";operation="WRITE";'
                           f'host="*"',)]
        dropped = _rows(t_env.execute_sql(f"CALL sec_admin.sys.drop_acl('cluster.{db}.t', 'ANY', 'User:bob', "
                                          f"'ANY', 'ANY')"))
        assert len(dropped) == 1 and 'principal="User:bob"' in dropped[0][0]
        assert _rows(t_env.execute_sql("CALL sec_admin.sys.list_acl('ANY', 'ANY', 'User:bob', 'ANY', 'ANY')")) == []
        with pytest.raises(Exception) as err:
            t_env.execute_sql(f"CALL sec_alice.sys.add_acl('cluster.{db}', 'ALLOW', 'User:alice', 'ALL', '*')").wait()
        assert "AUTHORIZATION_EXCEPTION" in str(err.value) or "permission" in str(err.value), str(err.value)[-2000:]
        with pytest.raises(Exception) as err:
            t_env.execute_sql(f"CALL sec_admin.sys.add_acl('cluster.{db}', 'ALLOW', 'User:alice', 'FLY', '*')").wait()
        assert "FLY" in str(err.value), str(err.value)[-2000:]
        # Fluss's rebalance procedures (docs/cluster-operations.md): a leader-only rebalance, its progress, errors
        rid = _rows(t_env.execute_sql("CALL sec_admin.sys.rebalance(priorityGoals => 'LEADER_DISTRIBUTION')"))[0][0]
        progress = [r[0] for r in _rows(t_env.execute_sql(f"CALL sec_admin.sys.list_rebalance('{rid}')"))]
        # (rows come back sorted) the id, the status, the progress, then one row per bucket
        assert rid in progress and {"NOT_STARTED", "REBALANCING", "COMPLETED"} & set(progress), progress
        assert any(r.endswith("%") for r in progress), progress
        assert _rows(t_env.execute_sql("CALL sec_admin.sys.list_rebalance(rebalanceId => 'rebalance-none')")) == []
        for call, expected in (("sys.rebalance('FASTEST')", "RACK_AWARE"),
                               ("sys.add_server_tag('99', 'TEMPORARY_OFFLINE')", "[99]"),
                               ("sys.remove_server_tag('0', 'RETIRED')", "PERMANENT_OFFLINE"),
                               ("sys.cancel_rebalance('rebalance-none')", "No rebalance")):
            with pytest.raises(Exception) as err:
                t_env.execute_sql(f"CALL sec_admin.{call}").wait()
            assert expected in str(err.value), (call, str(err.value)[-2000:])
        with pytest.raises(Exception) as err:
            t_env.execute_sql("CALL sec_alice.sys.list_rebalance()").wait()
        assert "AUTHORIZATION_EXCEPTION" in str(err.value) or "permission" in str(err.value), str(err.value)[-2000:]
        assert _rows(t_env.execute_sql(f"SELECT * FROM sec_alice.{db}.t")) == [(1, "a"), (2, "b")]
        # READ does not allow writing
        with pytest.raises(Exception) as err:
            t_env.execute_sql(f"INSERT INTO sec_alice.{db}.t VALUES (3, 'c')").wait()
        assert "WRITE" in str(err.value), str(err.value)[-2000:]

        # a table outside any catalog, with the credentials in WITH (...) (the JAAS form)
        jaas = ('org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required username="admin" '
                'password="admin-secret";')
        t_env.execute_sql(f"""CREATE TEMPORARY TABLE outside (id INT, v STRING) WITH ('connector'='fluss',
            'bootstrap.servers'='{secured_cluster.sasl_bootstrap_servers}', 'database-name'='{db}',
            'table-name'='t', 'client.security.protocol'='SASL',
            'client.security.sasl.jaas.config'='{jaas.replace("'", "''")}', {_tls(secured_cluster)})""").wait()
        t_env.execute_sql("INSERT INTO outside VALUES (4, 'd')").wait()
        table = await admin_conn.get_table(fluss.TablePath(db, "t"))
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})
        assert sorted((await scanner.to_arrow()).column("id").to_pylist()) == [1, 2, 4]
    finally:
        await admin_conn.get_admin().drop_database(db, ignore_if_not_exists=True, cascade=True)
        await admin_conn.aclose()


async def test_a_wrong_password_fails_create_catalog_with_the_reason_and_no_password(connector, secured_cluster):
    t_env = _batch_env(connector)
    with pytest.raises(Exception) as err:
        t_env.execute_sql(f"CREATE CATALOG bad WITH ('type'='fluss', "
                          f"{_sasl(secured_cluster, 'alice', 'not-the-password')})").wait()
    text = str(err.value)
    assert "invalid username or password" in text, text[-2000:]
    # Flink's own "Could not execute CreateCatalog" line repeats the catalog's properties; the connector's
    # messages (the causes) never carry the password
    causes = [line for line in text.splitlines() if "Caused by" in line or "invalid username" in line]
    assert causes and not any("not-the-password" in line for line in causes), causes
    with pytest.raises(Exception) as err:
        t_env.execute_sql(f"CREATE CATALOG plain_on_tls WITH ('type'='fluss', "
                          f"'bootstrap.servers'='{secured_cluster.sasl_bootstrap_servers}')").wait()
    assert "a TLS listener?" in str(err.value), str(err.value)[-2000:]
    with pytest.raises(Exception) as err:
        t_env.execute_sql(f"CREATE CATALOG tls_on_plain WITH ('type'='fluss', {_tls(secured_cluster)}, "
                          f"'bootstrap.servers'='{secured_cluster.bootstrap_servers}')").wait()
    assert "does not speak TLS" in str(err.value), str(err.value)[-2000:]
    with pytest.raises(Exception) as err:
        t_env.execute_sql(f"CREATE CATALOG anonymous_on_sasl WITH ('type'='fluss', {_tls(secured_cluster)}, "
                          f"'bootstrap.servers'='{secured_cluster.sasl_bootstrap_servers}')").wait()
    assert "requires SASL authentication" in str(err.value)
