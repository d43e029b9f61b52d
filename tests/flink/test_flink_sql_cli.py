"""``fluss sql``: statement splitting, and a script run through the CLI (in the session's PyFlink JVM)."""

from __future__ import annotations

import pytest

import fluss
from fluss.cli import main as cli_main
from fluss.flink.sql import split_statements, split_statements_with_lines


def test_statements_split_at_top_level_semicolons_and_statement_sets_stay_whole():
    script = """
        -- a comment; with a semicolon
        CREATE TABLE t (a STRING) WITH ('k' = 'x;y');  /* block; comment */
        INSERT INTO t VALUES ('it''s; fine');
        EXECUTE STATEMENT SET BEGIN
          INSERT INTO t VALUES ('1');
          INSERT INTO t VALUES ('2');
        END;
        SELECT `odd;name` FROM t
    """
    assert split_statements(script) == [
        "CREATE TABLE t (a STRING) WITH ('k' = 'x;y')",
        "INSERT INTO t VALUES ('it''s; fine')",
        "EXECUTE STATEMENT SET BEGIN\n          INSERT INTO t VALUES ('1');\nINSERT INTO t VALUES ('2');\nEND",
        "SELECT `odd;name` FROM t",
    ]
    assert split_statements("BEGIN STATEMENT SET; INSERT INTO a SELECT 1; END;") == [
        "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT 1;\nEND"]
    with pytest.raises(ValueError, match="END"):
        split_statements("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;")


async def test_fluss_sql_runs_a_script_against_the_cluster(batch_env, cluster, conn, flink_db, tmp_path):
    script = tmp_path / "pipeline.sql"
    script.write_text(f"""
        CREATE TABLE {flink_db}.kv (k INT NOT NULL, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket.num' = '2');
        INSERT INTO {flink_db}.kv VALUES (1, 'one'), (2, 'two');
        DELETE FROM {flink_db}.kv WHERE k = 2;
        SELECT * FROM {flink_db}.kv;
    """)
    assert cli_main(["sql", "-f", str(script), "--mode", "batch",
                     "--bootstrap-servers", cluster.bootstrap_servers]) == 0
    table = await conn.get_table(fluss.TablePath(flink_db, "kv"))
    lookuper = table.new_lookup().create_lookuper()
    try:
        assert [await lookuper.lookup([1]), await lookuper.lookup([2])] == [dict(k=1, v="one"), None]
    finally:
        await lookuper.aclose()


@pytest.mark.long  # Flink's own sql-client.sh: a JVM of its own; make test-long (make test runs `fluss sql` scripts)
def test_the_wheels_sql_client_runs_a_script_with_the_connector_jar(cluster, connector, tmp_path):
    """Flink's own ``sql-client.sh`` from the PyFlink wheel, ``-j`` the connector jar, against the cluster."""
    import os
    import re
    import subprocess

    import pyflink

    client = os.path.join(os.path.dirname(pyflink.__file__), "bin", "sql-client.sh")
    db = f"sqlclient_{os.getpid()}"
    script = tmp_path / "script.sql"
    script.write_text(f"""
        SET 'sql-client.execution.result-mode' = 'tableau';
        SET 'execution.runtime-mode' = 'batch';
        SET 'table.dml-sync' = 'true';
        CREATE CATALOG fluss_catalog WITH ('type' = 'fluss', 'bootstrap.servers' = '{cluster.bootstrap_servers}');
        USE CATALOG fluss_catalog;
        CREATE DATABASE {db};
        CREATE TABLE {db}.events (id INT, name STRING) WITH ('bucket.num' = '2');
        INSERT INTO {db}.events VALUES (1, 'one'), (2, 'two'), (3, 'three');
        SELECT name FROM {db}.events WHERE id = 2;
        DROP DATABASE {db} CASCADE;
    """)
    done = subprocess.run([client, "-j", connector, "-D", "execution.target=local", "-f", str(script)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "FLINK_LOG_DIR": str(tmp_path)})
    out = done.stdout + done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[:2000]
    assert "[ERROR]" not in out, done.stdout[-3000:] + done.stderr[:2000]
    assert re.search(r"\|\s+two\s+\|", out) and "1 row in set" in out, done.stdout[-3000:] + done.stderr[:2000]


def test_a_failing_script_statement_is_shown_with_its_line_and_root_cause(batch_env, cluster, flink_db, tmp_path,
                                                                          capsys):
    script = tmp_path / "broken.sql"
    script.write_text(f"-- a script with a typo\nCREATE TABLE {flink_db}.t (a INT);\n\nSELECT nope\n"
                      f"FROM {flink_db}.t;\nSELECT 1;\n")
    assert split_statements_with_lines(script.read_text()) == [
        (2, f"CREATE TABLE {flink_db}.t (a INT)"), (4, f"SELECT nope\nFROM {flink_db}.t"), (6, "SELECT 1")]
    code = cli_main(["sql", "-f", str(script), "--mode", "batch", "--bootstrap-servers", cluster.bootstrap_servers])
    out = capsys.readouterr().out
    assert code == 1, out
    assert f"[ERROR] Statement at line 4 of {script} failed:" in out, out
    assert f"    SELECT nope\n    FROM {flink_db}.t\n" in out  # the statement as written, line breaks kept
    causes = [line for line in out.splitlines() if line.startswith("Caused by: ")]
    assert len(causes) == 1 and "Column 'nope' not found" in causes[0], out
    assert "Traceback" not in out and "\tat org.apache" not in out and "--verbose" in out
    assert "1 row" not in out  # the script stopped at the failing statement


def test_an_unreachable_cluster_stops_the_session_in_one_line(tmp_path, capsys):
    from fluss.server.zk.local_server import free_port

    code = cli_main(["sql", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "-f", str(tmp_path / "none.sql")])
    out = capsys.readouterr().out
    assert code == 2
    error = [line for line in out.splitlines() if line.startswith("[ERROR]")]
    assert len(error) == 1 and "Cannot connect to the Fluss cluster" in error[0], out
    assert "connection refused" in error[0]


async def test_piped_statements_keep_their_line_breaks_and_errors_do_not_stop_the_input(batch_env, cluster,
                                                                                        admin, flink_db):
    import io

    from fluss.flink.sql import SqlSession

    out = io.StringIO()
    session = SqlSession(cluster.bootstrap_servers, mode="batch", out=out)
    piped = io.StringIO(f"CREATE TABLE {flink_db}.a (x INT,\n  -- a comment; with a semicolon\n  y INT);\n"
                        f"SELECT nope\n  FROM {flink_db}.a;\nCREATE TABLE {flink_db}.b (z INT);\n")
    assert session.interactive(piped, verbose=True) is False  # one statement failed
    text = out.getvalue()
    assert "[ERROR] Statement at line 4 of the input failed:" in text, text
    assert f"    SELECT nope\n      FROM {flink_db}.a\n" in text, text
    assert "Traceback" in text  # --verbose: the whole trace
    assert sorted(await admin.list_tables(flink_db)) == ["a", "b"]  # the statement after the error ran
    info = await admin.get_table_info(fluss.TablePath(flink_db, "a"))
    assert info.get_column_names() == ["x", "y"]
