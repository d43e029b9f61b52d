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
#: Environment variable with the SASL password of --username (so it stays out of the shell history).
PASSWORD_ENV = "FLUSS_PASSWORD"
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


def run_client(client: str | dict[str, str], work: Callable[[Any], Awaitable[int | None]]) -> int:
    """Connects to the cluster (bootstrap servers, or client properties from :func:`client_properties`), runs
    ``work(connection)`` and closes the connection; returns its exit code."""
    import fluss

    async def run() -> int:
        props = {"bootstrap.servers": client} if isinstance(client, str) else dict(client)
        async with await fluss.FlussConnection.create(fluss.Config(props)) as conn:
            return (await work(conn)) or 0

    return asyncio.run(run())


def add_bootstrap(parser: argparse.ArgumentParser) -> None:
    """--bootstrap-servers and the client's credentials (--username/--password or a client properties file)."""
    parser.add_argument("--bootstrap-servers", "-b", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT[,...]",
                        help=f"the cluster's coordinator address(es) (env {BOOTSTRAP_ENV})")
    parser.add_argument("--username", "-u", default=None,
                        help="SASL/PLAIN user (client.security.protocol=SASL); the password comes from --password, "
                             f"env {PASSWORD_ENV}, or a prompt")
    parser.add_argument("--password", default=None, help=f"SASL/PLAIN password (prefer env {PASSWORD_ENV})")
    parser.add_argument("--tls", action="store_true",
                        help="connect over TLS (client.security.ssl.enabled=true; the system's CAs unless "
                             "--tls-truststore)")
    parser.add_argument("--tls-truststore", default=None, metavar="PEM",
                        help="CA certificates to trust (client.security.ssl.truststore.path); implies --tls")
    parser.add_argument("--client-config", default=None, metavar="FILE",
                        help="client properties (YAML or key=value lines: client.security.protocol, "
                             "client.security.sasl.username, client.security.ssl.*, ...)")


def client_properties(args: argparse.Namespace) -> dict[str, str]:
    """The client properties of a command: --client-config, then --bootstrap-servers and --username."""
    props: dict[str, str] = {}
    if getattr(args, "client_config", None):
        props.update(_read_properties(args.client_config))
    if getattr(args, "bootstrap_servers", None) and (args.bootstrap_servers != DEFAULT_BOOTSTRAP
                                                     or "bootstrap.servers" not in props):
        props["bootstrap.servers"] = args.bootstrap_servers
    username = getattr(args, "username", None)
    if username:
        password = args.password if args.password is not None else os.environ.get(PASSWORD_ENV)
        if password is None:
            if not sys.stdin.isatty():
                raise SystemExit(f"error: --username {username} needs a password: --password or env {PASSWORD_ENV}")
            import getpass

            password = getpass.getpass(f"Password for {username}: ")
        props.update({"client.security.protocol": "SASL", "client.security.sasl.mechanism": "PLAIN",
                      "client.security.sasl.username": username, "client.security.sasl.password": password})
    elif getattr(args, "password", None) is not None:
        raise SystemExit("error: --password needs --username")
    if getattr(args, "tls", False) or getattr(args, "tls_truststore", None):
        props["client.security.ssl.enabled"] = "true"
    if getattr(args, "tls_truststore", None):
        props["client.security.ssl.truststore.path"] = args.tls_truststore
    return props


def _read_properties(path: str) -> dict[str, str]:
    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"error: client config {path} does not exist")
    text = file.read_text()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):  # Java-style key=value lines
        data = {}
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                key, sep, value = line.partition("=")
                if not sep:
                    raise SystemExit(f"error: {path}: expected key=value, got {line.split()[0]!r}...")
                data[key.strip()] = value.strip()
    return {str(k): str(v) for k, v in data.items()}


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
