"""The session of the request being handled: who sent it (principal), on which listener, from which host.

The :class:`~fluss.server.security.authentication.Authenticator` sets it for each request before the handler
runs; handlers and the access checks read it with :func:`current_session`. ``internal`` is true for a request
that came from another server of the cluster (on the internal listener, as the internal principal, or on a
PLAINTEXT internal listener): such requests bypass ACLs and may call the server-to-server APIs.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from fluss.acl import ANONYMOUS, Principal


@dataclass(frozen=True)
class Session:
    principal: Principal
    listener: str
    peer: str  # gRPC's peer string, e.g. "ipv4:127.0.0.1:53122"
    internal: bool = False

    @property
    def host(self) -> str:
        """The client's address without the port (``127.0.0.1``, ``::1``)."""
        kind, _, rest = self.peer.partition(":")
        if kind == "ipv6":
            rest = rest.strip("[")
            return rest.rsplit("]", 1)[0] if "]" in rest else rest.rsplit(":", 1)[0]
        return rest.rsplit(":", 1)[0] if kind == "ipv4" else rest


_CURRENT: contextvars.ContextVar[Session | None] = contextvars.ContextVar("fluss_session", default=None)

#: The session of code that runs outside a request (background work of the server itself).
LOCAL = Session(ANONYMOUS, "", "local", internal=True)


def current_session() -> Session:
    """The session of the request being handled (:data:`LOCAL` outside a request)."""
    return _CURRENT.get() or LOCAL


def set_session(session: Session) -> contextvars.Token:
    return _CURRENT.set(session)


def reset_session(token: contextvars.Token) -> None:
    _CURRENT.reset(token)
