"""Point reads through Flink's own Paimon connector (catalog ``'type'='paimon'``, Paimon's Java reader), in a JVM
of its own: what a Flink user reading the lake table directly gets.

:func:`point_reads` runs one PyFlink batch job in a child process: a ``UNION ALL`` of one ``SELECT ... WHERE
<key filter>`` per probe, so each branch's filter is pushed into its own Paimon source, which prunes buckets
with Paimon's bucket function exactly as a single point query would. It returns the key values each probe found.

The child process gets Paimon's Flink connector for Flink 2.x (``connector/target/paimon-flink/``, copied there
by the connector's Maven build: ``org.apache.paimon:paimon-flink-2.0``) and the Hadoop classes Paimon needs
(``connector/target/lib/flink-shaded-hadoop-2-uber-*.jar``); it runs apart from the session's PyFlink JVM, whose
``paimon-bundle`` (the connector's lake reader) would clash with the connector's bundled Paimon classes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAIMON_FLINK = REPO / "connector" / "target" / "paimon-flink"
LIB = REPO / "connector" / "target" / "lib"
TIMEOUT_S = 900


def jars() -> list[str]:
    connector = sorted(PAIMON_FLINK.glob("paimon-flink-*.jar"))
    hadoop = sorted(LIB.glob("flink-shaded-hadoop-2-uber-*.jar"))
    if not connector or not hadoop:
        pytest.fail(f"Flink's Paimon connector or the Hadoop uber jar is missing under {PAIMON_FLINK} / {LIB}: "
                    "build the connector (cd connector && mvn -q -B -DskipTests package)")
    return [connector[-1].as_uri(), hadoop[-1].as_uri()]


def point_reads(warehouse: str, probes: list[tuple[str, str, str]]) -> dict[int, list[str]]:
    """For each probe ``(table "db.t", key column, SQL condition)``, by index: the key values (as strings) of the
    rows Flink's Paimon source returns for ``WHERE <condition>``."""
    request = {"warehouse": warehouse, "jars": jars(), "probes": probes}
    proc = subprocess.run([sys.executable, __file__], input=json.dumps(request), capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    if proc.returncode != 0:
        pytest.fail(f"Flink Paimon point reads failed:\n{proc.stderr[-5000:]}")
    found: dict[int, list[str]] = {i: [] for i in range(len(probes))}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            found[row["probe"]].append(row["key"])
    return found


def _main() -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    request = json.loads(sys.stdin.read())
    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    config = env.get_config()
    config.set("pipeline.jars", ";".join(request["jars"]))
    config.set("parallelism.default", "1")
    config.set("rest.bind-port", "0")
    warehouse = Path(request["warehouse"]).as_uri()
    env.execute_sql(f"CREATE CATALOG lake WITH ('type'='paimon', 'warehouse'='{warehouse}')").wait()
    branches = []
    for i, (table, key, condition) in enumerate(request["probes"]):
        db, name = table.split(".")
        branches.append(f"SELECT {i} AS probe, CAST(`{key}` AS STRING) AS k FROM lake.`{db}`.`{name}` "
                        f"WHERE {condition}")
    with env.execute_sql(" UNION ALL ".join(branches)).collect() as rows:
        for row in rows:
            print(json.dumps({"probe": row[0], "key": row[1]}), flush=True)


if __name__ == "__main__":
    _main()
