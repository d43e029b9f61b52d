"""Fluss Gateway: a stateless HTTP/REST service over the Python client (see ``docs/gateway.md``).

``fluss gateway --bootstrap-servers host:9123 --port 8080`` runs it; ``create_app(GatewayConfig(...))`` builds the
ASGI application; ``uvicorn fluss.gateway:app`` serves one configured from the environment
(``FLUSS_GATEWAY_BOOTSTRAP_SERVERS`` or ``FLUSS_GATEWAY_CLUSTERS``, see ``fluss.gateway.config``).

The names are loaded on first use, so ``fluss`` commands that do not serve HTTP never import the web stack.
"""

from __future__ import annotations

__all__ = ["GatewayConfig", "create_app", "app"]


def __getattr__(name: str):
    if name == "create_app":
        from fluss.gateway.app import create_app

        return create_app
    if name == "GatewayConfig":
        from fluss.gateway.config import GatewayConfig

        return GatewayConfig
    if name == "app":  # built on first access, from the environment (uvicorn fluss.gateway:app)
        from fluss.gateway.app import create_app
        from fluss.gateway.config import GatewayConfig

        app = create_app(GatewayConfig.from_env())
        globals()["app"] = app
        return app
    raise AttributeError(f"module 'fluss.gateway' has no attribute {name!r}")
