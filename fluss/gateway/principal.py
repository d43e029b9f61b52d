"""Who a request acts for: the caller's principal, resolved before any handler runs.

Every request passes through :meth:`PrincipalResolver.resolve` (the middleware in ``fluss.gateway.http``), and the
resulting :class:`Principal` is what ``ClusterRegistry.get`` receives to pick the client connection the request
uses. :class:`PassThroughCredentials` (the default) passes HTTP Basic credentials on to the cluster: the request
runs on a connection that authenticates to the cluster with SASL/PLAIN as that user (``client.security.*``), so the
cluster's ACLs apply to the caller, not to the gateway. A wrong password is the cluster's answer (401
``unauthenticated``); a missing permission is 403 ``unauthorized``, naming the operation and resource. A request
without credentials runs as :data:`SERVICE`, the gateway's own configured connection (which may itself be
authenticated through its client options). Bearer tokens are refused (the cluster has no token authentication).

The gateway stays stateless per request: connections per principal are a bounded, least-recently-used pool
(``ClusterRegistry``). Use TLS in front of the gateway (``uvicorn --ssl-keyfile/--ssl-certfile`` or a proxy) when
Basic credentials cross an untrusted network. :class:`NoAuthentication` keeps the old behaviour: only the
gateway's identity, credentials refused.
"""

from __future__ import annotations

import base64
import binascii
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


class PassThroughCredentials:
    """HTTP Basic credentials become the principal whose SASL/PLAIN identity the cluster checks."""

    def resolve(self, authorization: str | None) -> Principal:
        if not authorization:
            return SERVICE
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() != "basic":
            raise GatewayError(UNAUTHENTICATED, f"'{scheme}' credentials are not supported: send HTTP Basic "
                               "credentials (the cluster's SASL/PLAIN user and password)")
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (ValueError, UnicodeError, binascii.Error):
            raise GatewayError(UNAUTHENTICATED, "malformed Basic credentials (expected base64 of user:password)") \
                from None
        user, sep, password = decoded.partition(":")
        if not sep or not user:
            raise GatewayError(UNAUTHENTICATED, "malformed Basic credentials (expected base64 of user:password)")
        return Principal(user, (user, password))


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
