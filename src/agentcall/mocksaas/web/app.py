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
    return JSONResponse(
        {"status": "ok" if connected else "degraded", "amqp": connected},
        status_code=200 if connected else 503,
    )


async def metrics(request: Request) -> Response:
    rt: Runtime = request.app.state.runtime
    return Response(rt.metrics.render(), media_type="text/plain; version=0.0.4")


async def failed(request: Request, exc: Exception) -> JSONResponse:
    """Any failure not answered by a route: logged, counted, a 500 in the JSON error shape."""
    rt: Runtime = request.app.state.runtime
    rt.metrics.handled.labels("http").inc()
    rt.metrics.http.labels("error", "500").inc()
    log.error(
        "request failed",
        extra={"fields": {"method": request.method, "path": request.url.path, "error": repr(exc)}},
    )
    error = {
        "code": "internal_error",
        "message": f"{type(exc).__name__} while answering",
        "hint": "a Mock SaaS bug: see its log (request failed) and report it",
    }
    return JSONResponse({"error": error}, status_code=500)


def build_app(rt: Runtime) -> Starlette:
    """The app over a started runtime; the runtime is stopped when the app shuts down."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await rt.stop()

    app = Starlette(
        routes=[
            *contract.routes,
            *admin.routes,
            Route("/healthz", healthz),
            Route("/metrics", metrics),
        ],
        lifespan=lifespan,
        exception_handlers={Exception: failed},
    )
    app.state.runtime = rt
    return app
