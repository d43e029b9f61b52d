"""What every resource handler shares: the cluster of a request, JSON responses, body models, paging."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TypeVar

import orjson
from fastapi import Request, Response
from pydantic import BaseModel, ValidationError

import fluss
from fluss.errors import FlussError
from fluss.gateway.clusters import ClusterClients, ClusterRegistry
from fluss.gateway.config import GatewayConfig
from fluss.gateway.errors import GatewayError, from_fluss, invalid
from fluss.gateway.http import JSON, json_body
from fluss.gateway.models import ErrorEnvelope

M = TypeVar("M", bound=BaseModel)

DEFAULT_PAGE = 100
MAX_PAGE = 1000

#: Error responses every cluster-scoped operation documents.
ERRORS = {status: {"model": ErrorEnvelope, "description": text} for status, text in {
    400: "Malformed request or invalid argument (code invalid_argument)",
    401: "Credentials were sent but the gateway cannot authenticate callers yet (unauthenticated)",
    404: "Unknown cluster, database, table or partition",
    413: "Body (or rows) above the configured limit (limit_exceeded)",
    500: "Fluss backend failure (backend)",
    503: "Fluss is unavailable, or a retriable cluster condition (unavailable)",
    504: "The cluster did not answer in time (timeout)",
}.items()}


def registry(request: Request) -> ClusterRegistry:
    return request.app.state.registry


def config(request: Request) -> GatewayConfig:
    return request.app.state.registry.config


def clients(request: Request, cluster: str) -> ClusterClients:
    return registry(request).get(cluster, request.state.principal)


def path_of(database: str, table: str) -> fluss.TablePath:
    return fluss.TablePath(database, table)


def respond(document: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(document), status_code=status, media_type=JSON, headers=headers)


def parse(model: type[M], document: object) -> M:
    """``document`` checked against a body model; 400 naming each wrong field."""
    try:
        return model.model_validate(document)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
                             for err in e.errors()[:10])
        raise invalid(f"invalid request body: {problems}") from None


async def body_model(request: Request, model: type[M]) -> M:
    return parse(model, await json_body(request, config(request).max_body_bytes))


def body_doc(model: type[BaseModel], media_types: Sequence[str] = (JSON,)) -> dict:
    """``openapi_extra`` declaring a request body read by the handler itself (not by FastAPI)."""
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True,
                            "content": {m: {"schema": ref if m == JSON else {"type": "string", "format": "binary"}}
                                        for m in media_types}},
            "x-body-models": [model.__name__]}


async def fluss_call(coro):
    """Awaits a client call; a FlussError becomes the gateway error of its code."""
    try:
        return await coro
    except FlussError as e:
        raise from_fluss(e) from None


# ------------------------------------------------------------------------------------------------ paging

def page(names: list[str], max_results: int | None, page_token: str | None) -> tuple[list[str], str | None]:
    """Keyset paging over sorted names: the page after the token's name, and the next token (or None)."""
    size = DEFAULT_PAGE if max_results is None else max_results
    if not 1 <= size <= MAX_PAGE:
        raise invalid(f"max_results must be between 1 and {MAX_PAGE}, got {size}")
    after = _decode_token(page_token) if page_token else None
    ordered = sorted(names)
    start = 0
    if after is not None:
        import bisect

        start = bisect.bisect_right(ordered, after)
    chunk = ordered[start:start + size]
    more = start + size < len(ordered)
    return chunk, (_encode_token(chunk[-1]) if more and chunk else None)


def _encode_token(last: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"after": last})).decode().rstrip("=")


def _decode_token(token: str) -> str:
    try:
        doc = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        after = doc["after"]
        if not isinstance(after, str):
            raise TypeError
        return after
    except (binascii.Error, ValueError, TypeError, KeyError, orjson.JSONDecodeError):
        raise GatewayError("invalid_argument", "page_token is not a token this gateway issued") from None
