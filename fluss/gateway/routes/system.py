"""``/health`` (liveness), ``/ready`` (accepting traffic), ``/v1/clusters`` and ``/v1/openapi.json``."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request

from fluss.gateway.errors import UNAVAILABLE, GatewayError
from fluss.gateway.models import ClustersResponse, ErrorEnvelope, HealthResponse, ReadyResponse
from fluss.gateway.routes.common import registry, respond

router = APIRouter()
STARTED = time.monotonic()


@router.get("/health", response_model=HealthResponse, tags=["health"], operation_id="getHealth",
            summary="Process liveness and uptime, without touching any cluster.")
async def health() -> object:
    return respond({"status": "ok", "uptime_ms": int((time.monotonic() - STARTED) * 1000)})


@router.get("/ready", response_model=ReadyResponse, tags=["health"], operation_id="getReady",
            summary="Whether the gateway accepts traffic (503 while starting or shutting down).",
            responses={503: {"model": ErrorEnvelope, "description": "Starting or shutting down"}})
async def ready(request: Request) -> object:
    if not getattr(request.app.state, "ready", False):
        raise GatewayError(UNAVAILABLE, "the gateway is starting or shutting down")
    return respond({"status": "ready"})


@router.get("/v1/clusters", response_model=ClustersResponse, tags=["metadata"], operation_id="listClusters",
            summary="The configured cluster ids (a configuration echo: no cluster is contacted).")
async def list_clusters(request: Request) -> object:
    return respond({"clusters": registry(request).ids()})


@router.get("/v1/openapi.json", tags=["metadata"], operation_id="getOpenApi",
            summary="This API's OpenAPI 3.1 document.")
async def openapi_document(request: Request) -> object:
    return respond(request.app.openapi())
