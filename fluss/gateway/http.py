"""The door every request passes: request ids, the caller's principal, body limits, and the error envelope.

:class:`GatewayMiddleware` (pure ASGI, so it costs no extra task per request) gives each request an id - the
caller's ``x-request-id`` when it is a sane token, else a new UUID - echoed in the ``x-request-id`` response
header; resolves the principal (``fluss.gateway.principal``) before any handler runs; and refuses a body whose
``Content-Length`` is above the limit with 413 before reading it. :func:`read_body` enforces the same limit on
bodies sent without a length, and :func:`json_body` parses JSON (orjson) - a malformed body is a 400 that never
reaches the cluster.
"""

from __future__ import annotations

import re
import uuid

import orjson
from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fluss.gateway.errors import (
    LIMIT_EXCEEDED,
    NOT_ACCEPTABLE,
    UNSUPPORTED_MEDIA_TYPE,
    GatewayError,
    envelope,
    invalid,
)
from fluss.gateway.principal import PrincipalResolver

REQUEST_ID_HEADER = "x-request-id"
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
JSON = "application/json"
ARROW_STREAM = "application/vnd.apache.arrow.stream"


def request_id_of(scope: Scope) -> str:
    return scope.get("state", {}).get("request_id", "")


def error_response_bytes(code: str, message: str, request_id: str, details: list | None = None) -> bytes:
    doc = envelope(code, message, request_id)
    if details:
        doc["error"]["details"] = details
    return orjson.dumps(doc)


class GatewayMiddleware:
    def __init__(self, app: ASGIApp, resolver: PrincipalResolver, max_body_bytes: int) -> None:
        self.app = app
        self.resolver = resolver
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get(REQUEST_ID_HEADER, "")
        request_id = given if _SANE_ID.match(given) else str(uuid.uuid4())
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        id_header = (REQUEST_ID_HEADER.encode(), request_id.encode())

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), id_header]
            await send(message)

        try:
            length = headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body_bytes):
                raise GatewayError(LIMIT_EXCEEDED, f"request body of {length} bytes is above the limit of "
                                   f"{self.max_body_bytes} bytes")
            state["principal"] = self.resolver.resolve(headers.get("authorization"))
        except GatewayError as e:
            body = error_response_bytes(e.code, e.message, request_id)
            await send_with_id({"type": "http.response.start", "status": e.status,
                                "headers": [(b"content-type", JSON.encode()),
                                            (b"content-length", str(len(body)).encode())]})
            await send_with_id({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send_with_id)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (413) more than ``limit`` bytes even without a Content-Length."""
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise GatewayError(LIMIT_EXCEEDED, f"request body is above the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def json_body(request: Request, limit: int) -> object:
    """The parsed JSON body; 415 for another media type, 400 for malformed JSON."""
    kind = media_type(request)
    if kind not in (JSON, "") and not kind.endswith("+json"):
        raise GatewayError(UNSUPPORTED_MEDIA_TYPE, f"this operation takes {JSON}, got '{kind}'")
    body = await read_body(request, limit)
    if not body:
        raise invalid("the request body is empty: a JSON object is expected")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise invalid(f"the request body is not valid JSON: {e}") from None


def wants_arrow(request: Request) -> bool:
    """Whether the response should be an Arrow stream (``Accept``); 406 when neither JSON nor Arrow is
    acceptable."""
    accept = request.headers.get("accept", "")
    if not accept:
        return False
    kinds = [part.split(";", 1)[0].strip().lower() for part in accept.split(",")]
    if ARROW_STREAM in kinds and JSON not in kinds:
        return True
    if any(k in (JSON, "*/*", "application/*") for k in kinds):
        return False
    if ARROW_STREAM in kinds:
        return True
    raise GatewayError(NOT_ACCEPTABLE, f"this operation answers {JSON} or {ARROW_STREAM}, not '{accept}'")
