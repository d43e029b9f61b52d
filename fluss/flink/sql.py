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
import threading
import traceback
from pathlib import Path
from typing import Any, TextIO

from fluss.flink import add_connector_jars
from fluss.flink.jvm_output import drain_gateway_stderr

DEFAULT_CATALOG = "fluss_catalog"
RUNTIME_MODE = "execution.runtime-mode"

#: Options the session sets unless the user does, with the reason it prints when it starts.
SESSION_DEFAULTS = {
    "table.exec.sink.require-on-conflict": (
        "false", "a plain INSERT INTO a primary-key table works as in Fluss's docs (the Fluss sink upserts by key; "
        "Flink 2.3 otherwise asks for an ON CONFLICT clause)"),
}
HISTORY_FILE = Path.home() / ".fluss" / "sql_history"

_SET = re.compile(r"^SET\s+'([^']+)'\s*=\s*'([^']*)'$", re.IGNORECASE)
_CREATE_CATALOG = re.compile(r"^CREATE\s+CATALOG\s+(IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?", re.IGNORECASE)
_SET_BEGIN = re.compile(r"^(EXECUTE\s+STATEMENT\s+SET\s+BEGIN|BEGIN\s+STATEMENT\s+SET)\b", re.IGNORECASE)


def _pieces(text: str) -> tuple[list[str], str]:
    """Splits at top-level ``;``; returns the complete pieces and the unterminated rest."""
    pieces, rest = _pieces_at(text)
    return [p for _, p in pieces], rest[1]


def _pieces_at(text: str) -> tuple[list[tuple[int, str]], tuple[int, str]]:
    """Like :func:`_pieces`, with the offset in ``text`` where each piece (and the rest) starts."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start: int | None = None  # offset of the piece's first non-blank character
    i, n = 0, len(text)

    def flush_piece() -> None:
        nonlocal buf, start
        piece = "".join(buf).strip()
        if piece:
            out.append((start if start is not None else i, piece))
        buf, start = [], None

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
            start = i if start is None else start
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
            flush_piece()
            i += 1
        else:
            if start is None and not ch.isspace():
                start = i
            buf.append(ch)
            i += 1
    rest = "".join(buf).strip()
    return out, (start if start is not None else n, rest)


def _group_statement_sets(pieces: list[str]) -> tuple[list[str], list[str]]:
    """Joins the pieces of statement sets; returns the statements and an unfinished statement set (if any)."""
    statements, unfinished = _group_located([(0, p) for p in pieces])
    return [s for _, s in statements], unfinished


def _group_located(pieces: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], list[str]]:
    """:func:`_group_statement_sets` of ``(offset, piece)``; a statement keeps the offset of its first piece."""
    out: list[tuple[int, str]] = []
    current: list[str] | None = None
    current_at = 0
    for at, p in pieces:
        if current is not None:
            current.append(p)
            if p.upper() == "END":
                head = current[0]
                if head.upper().startswith("BEGIN"):  # BEGIN STATEMENT SET; ...; END;
                    out.append((current_at, "EXECUTE STATEMENT SET BEGIN\n" + ";\n".join(current[1:-1]) + ";\nEND"))
                else:
                    out.append((current_at, ";\n".join(current[:-1]) + ";\nEND"))
                current = None
        elif _SET_BEGIN.match(p):
            current, current_at = [p], at
        else:
            out.append((at, p))
    return out, current or []


def split_statements(text: str) -> list[str]:
    """The statements of a script (a trailing statement without ``;`` counts too)."""
    return [statement for _, statement in split_statements_with_lines(text)]


def split_statements_with_lines(text: str) -> list[tuple[int, str]]:
    """``(line, statement)`` for each statement of a script, ``line`` (1-based) where the statement starts."""
    located, (rest_at, rest) = _pieces_at(text)
    if rest:
        located.append((rest_at, rest))
    statements, unfinished = _group_located(located)
    if unfinished:
        raise ValueError(f"Statement set not closed with END: {unfinished[0][:60]!r}")
    return [(text.count("\n", 0, at) + 1, statement) for at, statement in statements]


class SqlSession:
    """A PyFlink table environment with the Fluss connector and catalog (see module doc)."""

    def __init__(self, bootstrap_servers: str, mode: str = "streaming", catalog: str = DEFAULT_CATALOG,
                 config: dict[str, str] | None = None, out: TextIO | None = None,
                 client_options: dict[str, str] | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.client_options = dict(client_options or {})  # e.g. client.security.* of a secured cluster
        self.catalog = catalog
        self.config = dict(config or {})
        self.out = out or sys.stdout
        for key, (value, why) in SESSION_DEFAULTS.items():
            if key not in self.config:
                self.config[key] = value
                print(f"[INFO] Session sets '{key}' = '{value}': {why} (override with -D {key}=...)",
                      file=self.out)
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
        extra = "".join(f", '{k}'='{_sql_quote(v)}'" for k, v in self.client_options.items())
        t_env.execute_sql(f"CREATE CATALOG `{self.catalog}` WITH ('type'='fluss', "
                          f"'bootstrap.servers'='{self.bootstrap_servers}'{extra})").wait()
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
        job = result.get_job_client()
        if job is not None:
            if statement.lstrip().upper().startswith(("SELECT", "WITH", "VALUES", "(")):
                if _until_done_or_ctrl_c(result.print, job):  # a streaming query runs until Ctrl-C
                    print("[INFO] Query cancelled", file=self.out)
            else:
                print(f"[INFO] Submitted job {job.get_job_id()}", file=self.out)
                if _until_done_or_ctrl_c(result.wait, job):
                    print("[INFO] Job cancelled", file=self.out)
                else:
                    print("[INFO] Job finished", file=self.out)
        else:
            result.print()

    def run_script(self, text: str, source: str = "the script", verbose: bool = False) -> bool:
        """Runs the statements of a script in order and stops at the first that fails, printing it with its line
        in ``source`` and its root cause (the whole trace when ``verbose``). Returns whether all succeeded."""
        for line, statement in split_statements_with_lines(text):
            try:
                self.execute(statement)
            except Exception as e:  # noqa: BLE001 - reported to the user, who fixes the script
                report_error(e, statement, f"line {line} of {source}", self.out, verbose)
                return False
        return True

    def interactive(self, stdin: TextIO, verbose: bool = False) -> bool:
        """Reads statements ended by ``;`` (Flink SQL client style); each keeps its line breaks as typed or
        pasted. On a terminal: line editing and a history kept in ``~/.fluss/sql_history``. An error is printed
        and the session goes on; returns whether every statement succeeded."""
        lines = _terminal_lines(self.out) if stdin.isatty() else _stream_lines(stdin)
        buffer = ""
        ok = True
        first_line = 1  # input line where ``buffer`` starts
        line_no = 0
        prompt = None
        while True:
            try:
                line = lines.send(prompt) if prompt is not None else next(lines)
            except StopIteration:
                break
            line_no += 1
            if not buffer.strip():
                buffer, first_line = "", line_no
                if line.strip().rstrip(";").strip().upper() in ("QUIT", "EXIT"):
                    return ok
            buffer += line if line.endswith("\n") else line + "\n"
            located, (rest_at, rest) = _pieces_at(buffer)
            statements, unfinished = _group_located(located)
            if unfinished:
                prompt = "> "
                continue  # inside a statement set: wait for END;
            for at, statement in statements:
                if statement.upper() in ("QUIT", "EXIT"):
                    return ok
                where = f"line {first_line + buffer.count(chr(10), 0, at)} of the input"
                ok = self._run_reporting(statement, where, verbose) and ok
            if statements:
                first_line += buffer.count("\n", 0, rest_at) if rest else 0
                buffer = buffer[rest_at:] if rest else ""
            prompt = "> " if buffer.strip() else "Flink SQL> "
        if buffer.strip():
            ok = self._run_reporting(buffer.strip(), f"line {first_line} of the input", verbose) and ok
        return ok

    def _run_reporting(self, statement: str, where: str, verbose: bool) -> bool:
        try:
            self.execute(statement)
            return True
        except Exception as e:  # noqa: BLE001 - show the error, keep the session
            report_error(e, statement, where, self.out, verbose)
            return False


def _until_done_or_ctrl_c(wait, job) -> bool:
    """Runs ``wait()`` (a blocking PyFlink call) on a helper thread; Ctrl-C cancels ``job`` instead of breaking
    the py4j call in the middle. Returns True when the job was cancelled."""
    done = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            wait()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            failure.append(e)
        finally:
            done.set()

    threading.Thread(target=run, name="fluss-sql-wait", daemon=True).start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        try:
            job.cancel().result()
        except Exception:  # noqa: BLE001 - already finished or failed
            pass
        done.wait(30)
        return True
    if failure:
        raise failure[0]
    return False


def _stream_lines(stdin: TextIO):
    """Lines of a pipe or file, whole (a generator; the prompts sent to it are not shown)."""
    while True:
        line = stdin.readline()
        if not line:
            return
        yield line


def _terminal_lines(out: TextIO):
    """Lines typed at a terminal, through ``input()`` with GNU readline (editing, history file); the value
    sent to the generator is the next prompt."""
    try:
        import readline
    except ImportError:  # pragma: no cover - readline is part of CPython on Linux
        readline = None
    if readline is not None:
        try:
            HISTORY_FILE.parent.mkdir(parents=True, exist_ok=True)
            readline.read_history_file(HISTORY_FILE)
        except OSError:
            pass
        readline.set_history_length(2000)
    prompt = "Flink SQL> "
    try:
        while True:
            try:
                line = input(prompt)
            except EOFError:
                print(file=out)
                return
            except KeyboardInterrupt:  # Ctrl-C drops the line being typed, as Flink's SQL client does
                print("^C", file=out)
                line = ""
            sent = yield line + "\n"
            prompt = sent or prompt
    finally:
        if readline is not None:
            try:
                readline.write_history_file(HISTORY_FILE)
            except OSError:
                pass


def root_cause(error: BaseException) -> str:
    """One line: the innermost cause of an error, Java (through py4j) or Python."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            cause = java
            while cause.getCause() is not None and not cause.getCause().equals(cause):
                cause = cause.getCause()
            message = cause.getMessage()
            text = f"{cause.getClass().getName()}: {message}" if message else cause.getClass().getName()
            return text.strip().splitlines()[0]
        except Exception:  # noqa: BLE001 - the JVM is gone: fall back to the text
            pass
    inner = error
    while inner.__cause__ is not None:
        inner = inner.__cause__
    text = str(inner).strip()
    causes = [line.strip() for line in text.splitlines() if "Exception:" in line and not line.startswith("\tat")]
    if causes:
        return causes[-1]
    first = text.splitlines()[0] if text else ""
    return f"{type(inner).__name__}: {first}" if first else type(inner).__name__


def report_error(error: BaseException, statement: str, where: str, out: TextIO, verbose: bool) -> None:
    """Prints a failed statement: where it is, its text, one root-cause line (everything when ``verbose``)."""
    lines = statement.splitlines()
    shown = lines if len(lines) <= 12 else [*lines[:12], "..."]
    print(f"[ERROR] Statement at {where} failed:", file=out)
    for text_line in shown:
        print(f"    {text_line}", file=out)
    print(f"Caused by: {root_cause(error)}", file=out)
    if verbose:
        print("".join(traceback.format_exception(error)), file=out)
    else:
        print("(run `fluss sql` with --verbose for the whole trace)", file=out)
    out.flush()


def _sql_quote(value: str) -> str:
    return str(value).replace("'", "''")


def main(bootstrap_servers: str, file: str | None, mode: str, config: dict[str, str],
         verbose: bool = False, client_options: dict[str, str] | None = None) -> int:
    """``fluss sql``: run a script file, or statements from stdin (a terminal gets an interactive shell).

    Returns 0 when every statement succeeded, 1 when one failed, 2 when the session could not start (e.g. the
    cluster cannot be reached)."""
    drain_gateway_stderr()
    try:
        session = SqlSession(bootstrap_servers, mode=mode, config=config, client_options=client_options)
    except Exception as e:  # noqa: BLE001 - e.g. CREATE CATALOG cannot reach the cluster
        print(f"[ERROR] Could not start the SQL session: {root_cause(e)}")
        if verbose:
            traceback.print_exception(e, file=sys.stdout)
        return 2
    if file:
        with open(file, encoding="utf-8") as f:
            ok = session.run_script(f.read(), source=file, verbose=verbose)
    else:
        ok = session.interactive(sys.stdin, verbose=verbose)
    return 0 if ok else 1
