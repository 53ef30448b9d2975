"""The Starlette application: contract GETs, admin API, ``/healthz``, ``/metrics``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.web import admin, contract

log = logging.getLogger("mocksaas")


async def healthz(request: Request) -> JSONResponse:
    rt: Runtime = request.app.state.runtime
    connected = rt.broker.connection is not None and not rt.broker.connection.is_closed
    return JSONResponse({"status": "ok" if connected else "degraded", "amqp": connected},
                        status_code=200 if connected else 503)


async def metrics(request: Request) -> Response:
    rt: Runtime = request.app.state.runtime
    return Response(rt.metrics.render(), media_type="text/plain; version=0.0.4")


def build_app(rt: Runtime) -> Starlette:
    """The app over a started runtime; the runtime is stopped when the app shuts down."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await rt.stop()

    app = Starlette(
        routes=[*contract.routes, *admin.routes, Route("/healthz", healthz),
                Route("/metrics", metrics)],
        lifespan=lifespan,
    )
    app.state.runtime = rt
    return app
