"""Server addresses (``host:port``) and one-line reasons for failing to reach one.

``bootstrap.servers`` is a comma-separated list of ``host:port`` (``[v6-address]:port`` for IPv6); a missing
or non-numeric port is refused at once, naming the entry (gRPC would otherwise quietly use port 443).
:func:`unreachable_reason` turns a gRPC transport failure into a short cause a person can act on
("connection refused", "unknown host 'x'", "no answer within 5s") instead of gRPC's debug string.
"""

from __future__ import annotations

import re

import grpc

from fluss.errors import ErrorCode, FlussError


def parse_address(entry: str, option: str = "bootstrap.servers") -> tuple[str, int]:
    """``(host, port)`` of one ``host:port`` entry.

    Raises:
        FlussError: INVALID_CONFIG_EXCEPTION naming the entry and the option.
    """
    text = entry.strip()
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        why = "no port" if not sep or not port else "the port must be a number between 1 and 65535" \
            if not port.isdigit() or not 0 < int(port) < 65536 else "no host"
        raise FlussError(f"Invalid '{option}' entry '{text}': use host:port ({why})",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return host, int(port)


def parse_addresses(value: str, option: str = "bootstrap.servers") -> list[str]:
    """The ``host:port`` entries of a comma-separated list, each checked by :func:`parse_address`."""
    entries = [a.strip() for a in str(value or "").split(",") if a.strip()]
    if not entries:
        raise FlussError(f"'{option}' is empty: give at least one host:port", ErrorCode.INVALID_CONFIG_EXCEPTION)
    for entry in entries:
        parse_address(entry, option)
    return entries


_REFUSED = re.compile(r"connection refused|connect failed|failed to connect to remote host", re.IGNORECASE)
_UNKNOWN_HOST = re.compile(r"dns resolution failed|name or service not known|domain name not found|"
                           r"could not resolve|no address associated|temporary failure in name resolution",
                           re.IGNORECASE)


def unreachable_reason(address: str, error: grpc.aio.AioRpcError | grpc.RpcError, timeout_s: float) -> str:
    """Why ``address`` could not be reached, in a few words (no gRPC debug text)."""
    code = error.code() if hasattr(error, "code") else None
    details = (error.details() if hasattr(error, "details") else str(error)) or ""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"no answer within {timeout_s:g}s"
    if _UNKNOWN_HOST.search(details):
        host = address.rpartition(":")[0]
        return f"unknown host '{host}'"
    if _REFUSED.search(details):
        return "connection refused (nothing is listening there)"
    first = details.strip().splitlines()[0] if details.strip() else (code.name if code else "unreachable")
    return first if len(first) <= 120 else first[:117] + "..."
