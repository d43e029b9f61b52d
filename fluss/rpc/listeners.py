"""Listeners: where a server accepts connections, as Fluss writes them (``NAME://host:port[,NAME://host:port]``).

``bind.listeners`` says where a server binds and ``advertised.listeners`` what it tells others; each listener has
a name (``FLUSS``, ``CLIENT``, ``INTERNAL``), so that per-listener settings (the security protocol, for example)
can refer to it. A listener without a name (``127.0.0.1:9123``) is called ``FLUSS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fluss.errors import ErrorCode, FlussError

DEFAULT_LISTENER_NAME = "FLUSS"


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.name}://{self.address}"


def parse_listeners(text: str, key: str) -> list[Listener]:
    """Every listener of ``text``; raises INVALID_CONFIG_EXCEPTION naming ``key`` for a malformed one."""
    out: list[Listener] = []
    for item in (part.strip() for part in str(text).split(",")):
        if not item:
            continue
        name, sep, hostport = item.rpartition("://")
        host, colon, port = hostport.rpartition(":")
        if not colon or not port.isdigit() or (sep and not name):
            raise FlussError(f"Invalid listener {item!r} in '{key}' (expected e.g. FLUSS://127.0.0.1:9123)",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        listener = Listener(name.upper() if sep else DEFAULT_LISTENER_NAME, host or "0.0.0.0", int(port))
        if any(existing.name == listener.name for existing in out):
            raise FlussError(f"Listener name {listener.name} appears twice in '{key}'",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        out.append(listener)
    if not out:
        raise FlussError(f"'{key}' names no listener (expected e.g. FLUSS://127.0.0.1:9123)",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return out
