"""``GET /status`` (JSON), ``GET /metrics`` (Prometheus), ``GET /healthz``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentcall.dispatcher.web.metrics import render

Snapshot = Callable[[], Awaitable[dict[str, Any]]]


def build_app(snapshot: Snapshot, healthy: Callable[[], bool]) -> Starlette:
    async def status(request: Request) -> Response:
        return JSONResponse(await snapshot())

    async def metrics(request: Request) -> Response:
        body = render(await snapshot())
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def healthz(request: Request) -> Response:
        ok = healthy()
        return JSONResponse({"status": "ok" if ok else "failing"}, status_code=200 if ok else 503)

    return Starlette(
        routes=[
            Route("/status", status),
            Route("/metrics", metrics),
            Route("/healthz", healthz),
        ]
    )
