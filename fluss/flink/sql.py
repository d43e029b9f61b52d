"""Running Flink SQL scripts and interactive statements against a Fluss cluster (``fluss sql``).

A :class:`SqlSession` is a PyFlink ``TableEnvironment`` with the connector jar on ``pipeline.jars`` and a Fluss
catalog (``fluss_catalog`` by default) pointing at the cluster, made the current catalog. Statements are run one
by one with ``execute_sql``: a query prints its result table, an ``INSERT`` (or a statement set) waits for its
job, DDL prints ``OK``. ``SET 'key' = 'value'`` sets a Flink option (``execute_sql`` has no SET);
``SET 'execution.runtime-mode' = 'batch'|'streaming'`` switches to a new environment of
that mode (the catalog is created again there; temporary tables and views of the old one are gone). A
``CREATE CATALOG`` of the session's own catalog name is skipped, so scripts written for ``sql-client.sh`` (which
create the catalog themselves) run unchanged.

:func:`split_statements` splits a script at ``;`` outside string literals, quoted identifiers and comments,
and keeps ``EXECUTE STATEMENT SET BEGIN ... END;`` (or ``BEGIN STATEMENT SET; ... END;``) as one statement.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

from fluss.flink import add_connector_jars

DEFAULT_CATALOG = "fluss_catalog"
RUNTIME_MODE = "execution.runtime-mode"

_SET = re.compile(r"^SET\s+'([^']+)'\s*=\s*'([^']*)'$", re.IGNORECASE)
_CREATE_CATALOG = re.compile(r"^CREATE\s+CATALOG\s+(IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?", re.IGNORECASE)
_SET_BEGIN = re.compile(r"^(EXECUTE\s+STATEMENT\s+SET\s+BEGIN|BEGIN\s+STATEMENT\s+SET)\b", re.IGNORECASE)


def _pieces(text: str) -> tuple[list[str], str]:
    """Splits at top-level ``;``; returns the complete pieces and the unterminated rest."""
    out, buf = [], []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in ("'", '"', "`"):
            j = i + 1
            while j < n:
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:  # doubled quote escapes itself
                        j += 2
                        continue
                    break
                j += 1
            buf.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            buf.append("\n")
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            buf.append(" ")
        elif ch == ";":
            out.append("".join(buf).strip())
            buf = []
            i += 1
        else:
            buf.append(ch)
            i += 1
    return [p for p in out if p], "".join(buf).strip()


def _group_statement_sets(pieces: list[str]) -> tuple[list[str], list[str]]:
    """Joins the pieces of statement sets; returns the statements and an unfinished statement set (if any)."""
    out: list[str] = []
    current: list[str] | None = None
    for p in pieces:
        if current is not None:
            current.append(p)
            if p.upper() == "END":
                head = current[0]
                if head.upper().startswith("BEGIN"):  # BEGIN STATEMENT SET; ...; END;
                    out.append("EXECUTE STATEMENT SET BEGIN\n" + ";\n".join(current[1:-1]) + ";\nEND")
                else:
                    out.append(";\n".join(current[:-1]) + ";\nEND")
                current = None
        elif _SET_BEGIN.match(p):
            current = [p]
        else:
            out.append(p)
    return out, current or []


def split_statements(text: str) -> list[str]:
    """The statements of a script (a trailing statement without ``;`` counts too)."""
    pieces, rest = _pieces(text)
    if rest:
        pieces.append(rest)
    statements, unfinished = _group_statement_sets(pieces)
    if unfinished:
        raise ValueError(f"Statement set not closed with END: {unfinished[0][:60]!r}")
    return statements


class SqlSession:
    """A PyFlink table environment with the Fluss connector and catalog (see module doc)."""

    def __init__(self, bootstrap_servers: str, mode: str = "streaming", catalog: str = DEFAULT_CATALOG,
                 config: dict[str, str] | None = None, out: TextIO | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.catalog = catalog
        self.config = dict(config or {})
        self.out = out or sys.stdout
        self.t_env = self._create(mode)

    def _create(self, mode: str) -> Any:
        from pyflink.table import EnvironmentSettings, TableEnvironment

        if mode not in ("batch", "streaming"):
            raise ValueError(f"Invalid value {mode!r} for '{RUNTIME_MODE}': use batch or streaming")
        settings = EnvironmentSettings.in_batch_mode() if mode == "batch" else EnvironmentSettings.in_streaming_mode()
        t_env = TableEnvironment.create(settings)
        for key, value in self.config.items():
            t_env.get_config().set(key, value)
        add_connector_jars(t_env)
        t_env.execute_sql(f"CREATE CATALOG `{self.catalog}` WITH ('type'='fluss', "
                          f"'bootstrap.servers'='{self.bootstrap_servers}')").wait()
        t_env.use_catalog(self.catalog)
        self.mode = mode
        return t_env

    def execute(self, statement: str) -> None:
        """Runs one statement and prints its outcome (see module doc)."""
        m = _SET.match(statement.strip())
        if m:  # TableEnvironment.execute_sql has no SET (that is the SQL client's); do it here
            key, value = m.group(1), m.group(2)
            if key == RUNTIME_MODE:
                if value.lower() != self.mode:
                    self.t_env = self._create(value.lower())
                print(f"[INFO] Runtime mode is now {self.mode}", file=self.out)
                return
            self.config[key] = value
            self.t_env.get_config().set(key, value)
            print("[INFO] Execute statement succeeded.", file=self.out)
            return
        c = _CREATE_CATALOG.match(statement.strip())
        if c and c.group(2) == self.catalog:  # scripts written for sql-client.sh set it up themselves
            print(f"[INFO] Catalog {self.catalog} is already set up (bootstrap.servers={self.bootstrap_servers})",
                  file=self.out)
            return
        result = self.t_env.execute_sql(statement)
        if result.get_job_client() is not None:
            if statement.lstrip().upper().startswith(("SELECT", "WITH", "VALUES", "(")):
                result.print()
            else:
                print(f"[INFO] Submitted job {result.get_job_client().get_job_id()}", file=self.out)
                result.wait()
                print("[INFO] Job finished", file=self.out)
        else:
            result.print()

    def run_script(self, text: str) -> None:
        for statement in split_statements(text):
            self.execute(statement)

    def interactive(self, stdin: TextIO) -> None:
        """Reads statements separated by ``;`` from ``stdin``; an error is printed and the session goes on."""
        prompt = stdin.isatty()
        buffer = ""
        while True:
            if prompt:
                print("Flink SQL> " if not buffer.strip() else "> ", end="", file=self.out, flush=True)
            line = stdin.readline()
            if not line:
                break
            buffer += line
            pieces, rest = _pieces(buffer)
            statements, unfinished = _group_statement_sets(pieces)
            if unfinished:
                continue  # inside a statement set: wait for END;
            buffer = rest
            for statement in statements:
                if statement.upper() in ("QUIT", "EXIT"):
                    return
                try:
                    self.execute(statement)
                except Exception as e:  # noqa: BLE001 - show the error, keep the session
                    print(f"[ERROR] {_short_error(e)}", file=self.out)
        if buffer.strip():
            self.execute(buffer)


def _short_error(e: Exception) -> str:
    text = str(e)
    causes = [line.strip() for line in text.splitlines() if "Exception:" in line and not line.startswith("\tat")]
    return causes[-1] if causes else text.splitlines()[0] if text else type(e).__name__


def main(bootstrap_servers: str, file: str | None, mode: str, config: dict[str, str]) -> int:
    """``fluss sql``: run a script file, or statements from stdin."""
    session = SqlSession(bootstrap_servers, mode=mode, config=config)
    if file:
        with open(file, encoding="utf-8") as f:
            session.run_script(f.read())
    else:
        session.interactive(sys.stdin)
    return 0
