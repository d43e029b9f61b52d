"""Java Paimon for the lake tests: the jars under ``connector/target/lib`` and ``java/PaimonDump.java``.

``PaimonDump.java`` uses Paimon's public Java API only (no Fluss code) and runs as a Java 17 single-file
program: ``java -cp <jars> PaimonDump.java <warehouse> <db> <table> [<table>...]``. Paimon 1.3's ``paimon-bundle`` alone
cannot read a local warehouse: ``CatalogContext`` and the Parquet codecs load Hadoop classes
(``Configuration``, ``JobConf``), which need slf4j and log4j 1.x. The build copies these jars to
``connector/target/lib`` (``mvn -f connector/pom.xml package``); :func:`classpath` fails the test, naming the
missing ones and how to fetch them, when they are not there.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "connector" / "target" / "lib"
DUMP = Path(__file__).resolve().parent / "java" / "PaimonDump.java"

#: what the classpath needs: (description, glob patterns under LIB, Maven coordinates to fetch)
JARS = [
    ("Paimon bundle", ["paimon-bundle-*.jar"], "org.apache.paimon:paimon-bundle:1.3.1"),
    ("Hadoop classes", ["flink-shaded-hadoop-2-uber-*.jar"], "org.apache.flink:flink-shaded-hadoop-2-uber:2.8.3-10.0"),
    ("slf4j API", ["slf4j-api-*.jar"], "org.slf4j:slf4j-api:1.7.36"),
    ("log4j 1.x API", ["reload4j-*.jar", "log4j-1.2*.jar"], "ch.qos.reload4j:reload4j:1.2.25"),
]

JAVA_TIMEOUT_S = 180


def classpath() -> str:
    """The jars PaimonDump needs, from ``connector/target/lib``; fails the test clearly when one is missing."""
    found, missing = [], []
    for what, patterns, coordinates in JARS:
        jars = sorted(j for p in patterns for j in LIB.glob(p))
        if jars:
            found.append(str(jars[-1]))
        else:
            missing.append((what, patterns[0], coordinates))
    if shutil.which("java") is None:
        pytest.fail("Java Paimon readability check: no 'java' (17+) on PATH")
    if missing:
        fetch = "\n".join(f"  mvn -q -B dependency:copy -Dartifact={c} -DoutputDirectory={LIB}" for _, _, c in missing)
        pytest.fail("Java Paimon readability check: missing jars in connector/target/lib: "
                    + ", ".join(f"{w} ({p})" for w, p, _ in missing)
                    + f"\nBuild the connector (mvn -f connector/pom.xml package) or fetch them:\n{fetch}")
    return ":".join(found)


def paimon_dump(warehouse: str, database: str, *tables: str) -> dict[str, tuple[dict, list[dict]]]:
    """The tables as Java Paimon reads them (one JVM): ``{table: (schema, rows)}``; rows have ``kind``, ``row``."""
    proc = subprocess.run(["java", "-cp", classpath(), str(DUMP), warehouse, database, *tables],
                          capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    assert proc.returncode == 0, f"PaimonDump failed:\n{proc.stderr[-4000:]}"
    out: dict[str, tuple[dict, list[dict]]] = {}
    rows: list[dict] = []
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        item = json.loads(line)
        if "table" in item:
            rows = []
            out[item["table"]] = (item["schema"], rows)
        else:
            rows.append(item)
    assert sorted(out) == sorted(tables), proc.stdout[-2000:]
    return out


def java_form(value: object, arrow_type: pa.DataType | None = None) -> object:
    """A Python value (as Arrow's ``to_pylist`` gives it) in the form PaimonDump prints it; ``arrow_type`` tells
    maps (lists of pairs there, ``{"keys", "values"}`` in Java) from arrays."""
    if value is None:
        return None
    if arrow_type is not None and pa.types.is_map(arrow_type):
        return {"keys": [java_form(k, arrow_type.key_type) for k, _ in value],
                "values": [java_form(v, arrow_type.item_type) for _, v in value]}
    if arrow_type is not None and (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)):
        return [java_form(v, arrow_type.value_type) for v in value]
    if arrow_type is not None and pa.types.is_struct(arrow_type):
        return {f.name: java_form(value[f.name], f.type) for f in arrow_type}
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
            return f"{value:%Y-%m-%dT%H:%M:%S}.{value.microsecond * 1000:09d}Z"
        return f"{value:%Y-%m-%dT%H:%M:%S}.{value.microsecond * 1000:09d}"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return f"{value:%H:%M:%S}.{value.microsecond // 1000:03d}"
    return value


def java_rows(table: pa.Table) -> list[dict]:
    """The rows of an Arrow table in PaimonDump's form."""
    types = {f.name: f.type for f in table.schema}
    return [{k: java_form(v, types[k]) for k, v in row.items()} for row in table.to_pylist()]
