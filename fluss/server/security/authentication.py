"""Authentication at the door: the :class:`Authenticator` interceptor, one per listener.

On a SASL listener every call must carry a valid SASL/PLAIN token (``fluss.rpc.sasl``); the principal is
``User:<username>``. On a PLAINTEXT listener the principal is ``User:ANONYMOUS``. Refusals are
AUTHENTICATE_EXCEPTION responses that say what to change, never a hang and never a password:

* no credentials on a SASL listener (a PLAINTEXT client): "listener ... requires SASL authentication";
* credentials on a PLAINTEXT listener (a SASL client against the wrong port): "listener ... is PLAINTEXT";
* an unknown user or a wrong password: "invalid username or password" (the same answer for both, so the answer
  does not tell which usernames exist).

Verified tokens are cached (bounded), so an authenticated call costs one dictionary lookup; a failed one costs a
constant-time comparison and never touches the cache. Failures are counted (:class:`AuthenticationStats`) and
logged rate-limited with the running total, so a flood of bad attempts neither slows the server nor floods its log.
"""

from __future__ import annotations

import hmac
import logging
from collections import OrderedDict
from dataclasses import dataclass

import grpc

from fluss.acl import ANONYMOUS, Principal
from fluss.errors import ErrorCode, FlussError
from fluss.rpc.interceptors import RateLimitedLog, UnaryInterceptor, _wrap_unary, awaitable_handler
from fluss.rpc.listeners import Listener
from fluss.rpc.sasl import PLAIN, SASL_MECHANISM_METADATA_KEY, SASL_PLAIN_METADATA_KEY, parse_plain_token
from fluss.server.security.session import Session, reset_session, set_session
from fluss.server.security.settings import SecuritySettings

log = logging.getLogger("fluss.security")

_CACHE_SIZE = 4096


@dataclass
class AuthenticationStats:
    """Counters of one server since it started (every listener)."""

    succeeded: int = 0
    failed: int = 0


class Authenticator(UnaryInterceptor):
    def __init__(self, listener: Listener, settings: SecuritySettings, stats: AuthenticationStats,
                 failure_log_interval_s: float = 5.0) -> None:
        super().__init__()
        self.listener = listener.name
        self.security = settings.of(listener.name)
        self.internal_listener = listener.name == settings.internal_listener
        self.internal_principal = settings.internal_principal
        self.stats = stats
        self._verified: OrderedDict[str, Principal] = OrderedDict()
        self._failure_log = RateLimitedLog(failure_log_interval_s, log)

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        inner = awaitable_handler(handler.unary_unary)
        sasl = self.security.sasl

        async def behavior(request, context):
            token = mechanism = None
            for key, value in context.invocation_metadata() or ():
                if key == SASL_PLAIN_METADATA_KEY:
                    token = value
                elif key == SASL_MECHANISM_METADATA_KEY:
                    mechanism = value
            if sasl:
                principal = self._authenticate(token, mechanism, context)
            elif token is not None:
                self._failed(context, None, "SASL credentials on a PLAINTEXT listener")
                raise FlussError(f"Listener {self.listener} is PLAINTEXT (no authentication), but the client sent "
                                 f"SASL credentials: connect with client.security.protocol=PLAINTEXT, or to a "
                                 f"SASL listener", ErrorCode.AUTHENTICATE_EXCEPTION)
            else:
                principal = ANONYMOUS
            internal = self.internal_listener and (not sasl or principal == self.internal_principal)
            session_token = set_session(Session(principal, self.listener, context.peer(), internal))
            try:
                return await inner(request, context)
            finally:
                reset_session(session_token)

        return _wrap_unary(handler, behavior)

    def _authenticate(self, token: str | None, mechanism: str | None, context) -> Principal:
        if token is None:
            self._failed(context, None, "no credentials")
            raise FlussError(f"Listener {self.listener} requires SASL authentication: connect with "
                             f"client.security.protocol=SASL, client.security.sasl.mechanism=PLAIN and a username "
                             f"and password", ErrorCode.AUTHENTICATE_EXCEPTION)
        principal = self._verified.get(token)
        if principal is not None:
            return principal
        if mechanism is not None and mechanism.upper() != PLAIN:
            self._failed(context, None, f"mechanism {mechanism!r}")
            raise FlussError(f"Unsupported SASL mechanism {mechanism!r} on listener {self.listener} (enabled: "
                             f"{PLAIN})", ErrorCode.AUTHENTICATE_EXCEPTION)
        try:
            username, password = parse_plain_token(token)
        except FlussError:
            self._failed(context, None, "malformed token")
            raise
        expected = self.security.users.get(username)
        # compare against something even for an unknown user, so timing does not tell which users exist
        ok = hmac.compare_digest((expected if expected is not None else "\0" + password).encode(), password.encode())
        if not ok or expected is None:
            self._failed(context, username, "invalid username or password")
            raise FlussError(f"Authentication failed on listener {self.listener}: invalid username or password "
                             f"(SASL/PLAIN)", ErrorCode.AUTHENTICATE_EXCEPTION)
        principal = Principal.user(username)
        self.stats.succeeded += 1
        self._verified[token] = principal
        if len(self._verified) > _CACHE_SIZE:
            self._verified.popitem(last=False)
        return principal

    def _failed(self, context, username: str | None, reason: str) -> None:
        self.stats.failed += 1
        who = f"user {username!r}" if username else "a client"
        self._failure_log.warning("authentication failed on listener %s for %s from %s: %s (%d failures since "
                                  "start)", self.listener, who, context.peer(), reason, self.stats.failed)
