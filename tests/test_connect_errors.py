"""A wrong bootstrap address fails fast and says why in one line: nothing listening, an unknown host, a missing
port; the wait is ``connect-timeout`` (a few seconds by default), not the request timeout."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

import fluss
from fluss import ErrorCode, FlussError
from fluss.server.zk.local_server import free_port


async def _connect_error(address: str, **options: str) -> tuple[FlussError, float]:
    start = time.monotonic()
    with pytest.raises(FlussError) as e:
        await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": address, **options}))
    return e.value, time.monotonic() - start


async def test_nothing_listening_fails_within_the_connect_timeout_naming_address_and_cause():
    address = f"127.0.0.1:{free_port()}"
    error, waited = await _connect_error(address)
    assert waited < 8, waited  # connect-timeout defaults to 5s (it was 120s of silence)
    assert error.error_code == ErrorCode.NETWORK_EXCEPTION
    assert f"{address}: connection refused" in error.message, error.message
    assert "\n" not in error.message and "debug_error_string" not in error.message
    error, waited = await _connect_error(address, **{"connect-timeout": "1s"})
    assert waited < 3, waited


async def test_unknown_host_and_malformed_addresses_are_named():
    error, _ = await _connect_error("no-such-host.invalid:9123", **{"connect-timeout": "1s"})
    assert "unknown host 'no-such-host.invalid'" in error.message, error.message
    for bad, why in [("127.0.0.1", "no port"), ("127.0.0.1:port", "must be a number"), ("", "empty")]:
        error, waited = await _connect_error(bad)
        assert waited < 1 and error.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
        assert why in error.message and (bad in error.message), error.message


def test_the_cli_prints_one_line_and_exits_non_zero():
    address = f"127.0.0.1:{free_port()}"
    done = subprocess.run([sys.executable, "-m", "fluss.cli", "table", "list", "--bootstrap-servers", address],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and address in lines[0] and "connection refused" in lines[0], done.stderr
    waited = float(re.search(r"after ([0-9.]+)s", lines[0]).group(1))  # the wait, without Python's start-up
    assert waited < 8, lines[0]
