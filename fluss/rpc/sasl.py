"""SASL/PLAIN on the wire: how a client proves who it is to a listener whose security protocol is SASL.

Fluss authenticates a connection once with a SASL exchange. gRPC multiplexes calls over connections it manages
itself, so here every call carries the PLAIN initial response (RFC 4616: ``authzid NUL authcid NUL passwd``),
base64-encoded, in the request metadata key :data:`SASL_PLAIN_METADATA_KEY` (and the mechanism in
:data:`SASL_MECHANISM_METADATA_KEY`). The server checks it on every call (a dictionary lookup once a token was
verified; see ``fluss.server.security.authentication``). Use TLS on a listener that is reached over an untrusted
network, as with SASL/PLAIN anywhere.

:class:`SaslPlainCredentials` is the client interceptor a :class:`~fluss.rpc.channels.ChannelFactory` is given
(the Python client, and a server's channels to the internal listener). Neither the token nor the password is ever
part of an error message or a log line.
"""

from __future__ import annotations

import base64
import binascii

import grpc

from fluss.errors import ErrorCode, FlussError

SASL_MECHANISM_METADATA_KEY = "fluss-sasl-mechanism"
SASL_PLAIN_METADATA_KEY = "fluss-sasl-plain"
PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = (PLAIN,)


def plain_token(username: str, password: str) -> str:
    """The base64 PLAIN initial response for ``username`` (no authorization identity)."""
    if not username:
        raise FlussError("SASL/PLAIN needs a username", ErrorCode.AUTHENTICATE_EXCEPTION)
    if "\0" in username or "\0" in password:
        raise FlussError("SASL/PLAIN username and password cannot contain NUL characters",
                         ErrorCode.AUTHENTICATE_EXCEPTION)
    return base64.b64encode(b"\0" + username.encode() + b"\0" + password.encode()).decode("ascii")


def parse_plain_token(token: str) -> tuple[str, str]:
    """``(username, password)`` of a PLAIN token; AUTHENTICATE_EXCEPTION when it is malformed."""
    try:
        raw = base64.b64decode(token.encode("ascii"), validate=True)
        authzid, username, password = raw.split(b"\0")
        user, authz = username.decode(), authzid.decode()
        secret = password.decode()
    except (ValueError, UnicodeError, binascii.Error):
        raise FlussError("Malformed SASL/PLAIN token", ErrorCode.AUTHENTICATE_EXCEPTION) from None
    if not user or (authz and authz != user):
        raise FlussError("Malformed SASL/PLAIN token (empty username, or an authorization id other than the "
                         "username)", ErrorCode.AUTHENTICATE_EXCEPTION)
    return user, secret


class _Metadata:
    """Adds fixed metadata to every call (the shared part of the aio interceptors below)."""

    def __init__(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self._pairs = pairs

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = list(details.metadata or ()) + list(self._pairs)
        return grpc.aio.ClientCallDetails(details.method, details.timeout, grpc.aio.Metadata(*metadata),
                                          details.credentials, details.wait_for_ready)


class SaslPlainCredentials(_Metadata, grpc.aio.UnaryUnaryClientInterceptor):
    """Client interceptor: every unary call carries the PLAIN token of ``username``/``password``."""

    def __init__(self, username: str, password: str) -> None:
        super().__init__(((SASL_MECHANISM_METADATA_KEY, PLAIN), (SASL_PLAIN_METADATA_KEY,
                                                                  plain_token(username, password))))
        self.username = username

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The metadata pairs (for blocking channels, which take metadata per call)."""
        return self._pairs

    async def intercept_unary_unary(self, continuation, client_call_details, request):
        return await continuation(self._details(client_call_details), request)

    def __repr__(self) -> str:
        return f"SaslPlainCredentials(username={self.username!r})"
