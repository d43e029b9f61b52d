"""``fluss sql``: statement splitting, and a script run through the CLI (in the session's PyFlink JVM)."""

from __future__ import annotations

import pytest

import fluss
from fluss.cli import main as cli_main
from fluss.flink.sql import split_statements


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
