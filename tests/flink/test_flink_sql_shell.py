"""The interactive ``fluss sql`` shell, driven through a real terminal (tmux) as a person uses it: a statement
typed over several lines, statements pasted at once, the plain streaming ``INSERT INTO pk_table VALUES`` of
Fluss's docs, an error shown with its line and root cause, history kept across sessions, ``QUIT;``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest

import fluss


class Terminal:
    """One tmux session on a private server socket, running a command."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        if shutil.which("tmux") is None:
            pytest.fail("tmux is not installed: `make setup` installs it (Debian package tmux)")
        self.socket = f"fluss-test-{uuid.uuid4().hex[:8]}"
        settings = [arg for k, v in env.items() for arg in ("-e", f"{k}={v}")]
        self._tmux("new-session", "-d", "-s", "t", "-x", "220", "-y", "60", *settings, *command)

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True,
                              text=True).stdout

    def type_line(self, text: str) -> None:
        """Types a line and Enter; ';' is sent as a key of its own (tmux reads a trailing ';' as a separator)."""
        for i, part in enumerate(text.split(";")):
            if i:
                self._tmux("send-keys", "-t", "t", "-H", "3b")
            if part:
                self._tmux("send-keys", "-t", "t", "-l", part)
        self._tmux("send-keys", "-t", "t", "Enter")

    def paste(self, text: str, tmp_path) -> None:
        buffer = tmp_path / f"paste-{uuid.uuid4().hex[:6]}.sql"
        buffer.write_text(text)
        self._tmux("load-buffer", "-b", "p", str(buffer))
        self._tmux("paste-buffer", "-b", "p", "-t", "t")

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-")

    def wait_for(self, text: str, timeout_s: float = 300, count: int = 1) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            time.sleep(0.5)
        raise AssertionError(f"{text!r} (x{count}) did not appear within {timeout_s}s:\n{self.screen()[-4000:]}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


async def test_interactive_shell_keeps_statements_whole_and_explains_errors(cluster, conn, admin, tmp_path):
    db = f"shell_{uuid.uuid4().hex[:6]}"
    await admin.create_database(db)
    home = tmp_path / "home"
    home.mkdir()
    env = {**{k: v for k, v in os.environ.items() if "\n" not in v}, "HOME": str(home), "TERM": "xterm"}
    term = Terminal([sys.executable, "-m", "fluss.cli", "sql", "--bootstrap-servers", cluster.bootstrap_servers], env)
    try:
        term.wait_for("Flink SQL> ")
        # typed over three lines: the shell waits for ';' and keeps the line breaks
        term.type_line(f"CREATE TABLE {db}.kv (k INT NOT NULL,")
        term.type_line("  v STRING,")
        term.type_line("  PRIMARY KEY (k) NOT ENFORCED);")
        term.wait_for("OK")
        # pasted: the plain streaming INSERT of Fluss's docs, then a batch query over several lines
        term.paste(f"INSERT INTO {db}.kv VALUES (1, 'one'), (2, 'two');\n"
                   "SET 'execution.runtime-mode' = 'batch';\n"
                   f"SELECT v\nFROM {db}.kv\nWHERE k = 2;\n", tmp_path)
        term.wait_for("[INFO] Job finished")
        screen = term.wait_for("1 row in set")
        result = screen[screen.index("WHERE k = 2;"):screen.index("1 row in set")]
        assert "two" in result and "one" not in result, result
        # a failing statement: its line in the input, its text, one root-cause line
        term.type_line(f"SELECT nope FROM {db}.kv;")
        screen = term.wait_for("Caused by: ")
        error = screen[screen.index("[ERROR] Statement at line "):]
        assert error.splitlines()[0] == "[ERROR] Statement at line 9 of the input failed:", error
        assert f"    SELECT nope FROM {db}.kv" in error and "Traceback" not in error
        cause = next(line for line in error.splitlines() if line.startswith("Caused by: "))
        assert "nope" in cause, cause
        term.type_line("QUIT;")
        deadline = time.monotonic() + 60
        while not (home / ".fluss" / "sql_history").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        term.close()
    history = (home / ".fluss" / "sql_history").read_text()
    assert f"CREATE TABLE {db}.kv (k INT NOT NULL," in history and "QUIT;" in history
    lookuper = (await conn.get_table(fluss.TablePath(db, "kv"))).new_lookup().create_lookuper()
    try:
        assert await lookuper.lookup({"k": 1}) == {"k": 1, "v": "one"}
    finally:
        await lookuper.aclose()
        await admin.drop_database(db, ignore_if_not_exists=True, cascade=True)
