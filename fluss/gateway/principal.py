"""Who a request acts for: the seam where authentication will plug in (issue #17).

Every request passes through :meth:`PrincipalResolver.resolve` before a handler runs (the middleware in
``fluss.gateway.app``), and the resulting :class:`Principal` is what ``ClusterRegistry.connection`` receives to
pick the client connection the request uses. Today the cluster has no authentication, so there is exactly one
principal, :data:`SERVICE`: the gateway's own connection, with no per-caller identity.

Faking an identity would be worse than having none: a caller who sends ``Authorization: Basic ...`` or
``Bearer ...`` expects the cluster's ACLs to apply to *them*. Until the cluster can authenticate (SASL/PLAIN,
issue #17), :class:`NoAuthentication` refuses such requests with 401 ``unauthenticated`` instead of silently
running them under the gateway's identity.

When #17 lands: a ``PassThroughCredentials`` resolver turns Basic credentials into
``Principal(name, username, password)`` (bearer tokens once the cluster accepts them), and
``ClusterRegistry.connection`` keeps one client connection per (cluster, principal) with
``security.protocol=SASL``, ``security.sasl.username/password`` - a bounded, idle-evicted pool, so the
gateway stays stateless per request. TLS is uvicorn's (``--ssl-keyfile/--ssl-certfile``), added to
``fluss gateway`` with the same issue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from fluss.gateway.errors import UNAUTHENTICATED, GatewayError


@dataclass(frozen=True)
class Principal:
    """The identity a request runs as. ``credentials`` stay out of ``repr`` (and logs)."""

    name: str
    credentials: tuple[str, ...] = field(default=(), repr=False)

    @property
    def is_service(self) -> bool:
        return self is SERVICE


#: The gateway's own identity: its configured client connection.
SERVICE = Principal("gateway-service")


class PrincipalResolver(Protocol):
    def resolve(self, authorization: str | None) -> Principal:
        """The principal of a request from its ``Authorization`` header; raises GatewayError to refuse it."""


class NoAuthentication:
    """The resolver while the cluster has no authentication: anonymous requests run as :data:`SERVICE`;
    requests that carry credentials are refused, never run under another identity."""

    def resolve(self, authorization: str | None) -> Principal:
        if authorization:
            scheme = authorization.split(" ", 1)[0]
            raise GatewayError(UNAUTHENTICATED, f"this gateway cannot authenticate callers yet ('{scheme}' "
                               "credentials were sent): the Fluss cluster has no authentication, so requests "
                               "run as the gateway's own identity only; send no Authorization header")
        return SERVICE
