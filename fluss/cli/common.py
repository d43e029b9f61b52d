"""What every ``fluss`` subcommand shares: ``-D key=value`` parsing, quiet logging, one-line errors, a client
connection, progress bars (``rich``)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

#: Environment variable that changes the default of --bootstrap-servers (e.g. for a cluster on another port).
BOOTSTRAP_ENV = "FLUSS_BOOTSTRAP_SERVERS"
DEFAULT_BOOTSTRAP = os.environ.get(BOOTSTRAP_ENV) or "127.0.0.1:9123"

#: Third-party loggers that talk at INFO about things a user of the CLI does not need.
NOISY_LOGGERS = ("kazoo", "py4j", "apache_beam", "pyflink", "grpc", "urllib3", "fsspec", "asyncio",
                 "pypaimon", "pyarrow")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's line breaks and shows each option's default (flags and unset options have none)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "%(default)" in text or default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            return text
        return f"{text} (default: {default})"


def parse_overrides(pairs: list[str] | None) -> dict[str, str]:
    """``-D key=value`` options as a dict."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"error: -D expects key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def load_server_yaml(path: str | None) -> dict[str, str]:
    """The options of a ``server.yaml`` (Fluss's keys) as strings; empty without a path."""
    if not path:
        return {}
    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"error: server config {path} does not exist")
    data = yaml.safe_load(file.read_text()) or {}
    if not isinstance(data, dict):
        raise SystemExit(f"error: {path} must hold key: value pairs")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in data.items()}


def quiet_logging(level: int = logging.WARNING) -> None:
    """Logs of the CLI itself at ``level``; the chatty third-party loggers at WARNING at most."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))


def run_client(bootstrap_servers: str, work: Callable[[Any], Awaitable[int | None]]) -> int:
    """Connects to the cluster, runs ``work(connection)`` and closes the connection; returns its exit code."""
    import fluss

    async def run() -> int:
        config = fluss.Config({"bootstrap.servers": bootstrap_servers})
        async with await fluss.FlussConnection.create(config) as conn:
            return (await work(conn)) or 0

    return asyncio.run(run())


def add_bootstrap(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", "-b", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT[,...]",
                        help=f"the cluster's coordinator address(es) (env {BOOTSTRAP_ENV})")


def progress(transient: bool = True, total: float | None = None, description: str = ""):
    """A ``rich`` progress display on stderr (nothing when stderr is not a terminal)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    return Progress(*columns, console=console, transient=transient, disable=not console.is_terminal)


def table_path(text: str):
    """``DATABASE.TABLE`` as a TablePath (a bare name is a table of the default database ``fluss``)."""
    import fluss

    database, sep, table = text.rpartition(".")
    if not table or (sep and not database) or "." in database:
        raise SystemExit(f"error: expected DATABASE.TABLE, got {text!r}")
    return fluss.TablePath(database or "fluss", table)
