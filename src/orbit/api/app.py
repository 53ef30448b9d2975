"""The ASGI application: routes, the request-ID/error/log/metrics wrapper, health, metrics and
the OpenAPI document. `create_app(db)` refuses to start on an unmigrated database."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from orbit.api import routes, submit_metrics
from orbit.api.control_routes import ControlRoutes
from orbit.api.errors import wire_error
from orbit.api.http import envelope
from orbit.domain.errors import NotFound, OrbitError, Unavailable
from orbit.domain.ids import new_id
from orbit.store.db import Database
from orbit.store.migrate import require_current
from orbit.store.operations import Operations
from orbit.workers.service import ExecutionService

log = logging.getLogger("orbit.api")
Handler = Callable[[Request, routes.Context], Awaitable[Response]]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "orbit_http_requests", "HTTP requests by route and status",
            ["route", "status"], registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "orbit_http_request_seconds", "HTTP request latency by route",
            ["route"], registry=self.registry,
            buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
        )  # fmt: skip


def openapi_text() -> bytes:
    return resources.files("orbit.api").joinpath("openapi.json").read_bytes()


def create_app(db: Database, *, access_log: bool = True) -> Starlette:
    ops = Operations(db)
    metrics = Metrics()
    submit_metrics.register(metrics.registry, ops)
    execution = ExecutionService(db, ops, registry=metrics.registry)  # P2: workers, history
    control = ControlRoutes(execution.hub.tell_cancel, execution.hub.notify)  # P3 (issue 8)

    def endpoint(name: str, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            started = time.perf_counter()
            ctx = routes.Context(new_id(), ops)
            try:
                response = await handler(request, ctx)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a wire error
                response = _error(ctx, request, exc)
            elapsed = time.perf_counter() - started
            metrics.requests.labels(name, str(response.status_code)).inc()
            metrics.latency.labels(name).observe(elapsed)
            if access_log:
                _access(request, response, ctx, name, elapsed)
            return response

        return run

    async def not_found(request: Request, exc: Exception) -> Response:
        ctx = routes.Context(new_id(), ops)
        return _error(ctx, request, NotFound("no such route; see /openapi.json"))

    async def health(request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    async def metrics_page(request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    document = openapi_text()

    async def openapi(request: Request) -> Response:
        return Response(document, media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await require_current(db)
        await execution.start()
        log.info("orbit api ready", extra={"dialect": db.dialect.value})
        yield
        await execution.stop()
        await db.close()

    return Starlette(
        routes=[
            Route(
                "/v1/tasks",
                endpoint("submit", execution.notifying(routes.submit_task)),
                methods=["POST"],
            ),
            Route("/v1/tasks", endpoint("list", routes.list_tasks), methods=["GET"]),
            Route("/v1/tasks:batch", endpoint("batch", control.batch), methods=["POST"]),
            Route(
                "/v1/tasks/{task_id}:cancel",
                endpoint("cancel", control.cancel),
                methods=["POST"],
            ),
            Route("/v1/tasks/{task_id}:retry", endpoint("retry", control.retry), methods=["POST"]),
            Route(
                "/v1/tasks/{task_id}:resolve",
                endpoint("resolve", control.resolve),
                methods=["POST"],
            ),
            Route("/v1/tasks/{task_id}", endpoint("get", routes.get_task), methods=["GET"]),
            *execution.routes(endpoint),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/healthz", health, methods=["GET"]),
            Route("/metrics", metrics_page, methods=["GET"]),
        ],
        exception_handlers={HTTPException: not_found},
        lifespan=lifespan,
    )


def _error(ctx: routes.Context, request: Request, exc: Exception) -> Response:
    wire = wire_error(exc)
    if isinstance(exc, OrbitError) and not isinstance(exc, Unavailable):
        message = exc.message
    else:
        message = "the service could not complete the request; retry with the same key"
        log.error("request failed", exc_info=exc, extra={"request_id": ctx.request_id})
    ctx.rejected = (wire.code, message)
    response = envelope(ctx.request_id, wire.status, error={"code": wire.code, "message": message})
    if wire.status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="orbit"'
    return response


def _access(
    request: Request, response: Response, ctx: routes.Context, name: str, elapsed: float
) -> None:
    """One line per request; rejected requests carry the error code (never bodies/tokens)."""
    log.info(
        "request",
        extra={
            "request_id": ctx.request_id,
            "route": name,
            "method": request.method,
            "status": response.status_code,
            "ms": round(elapsed * 1000, 2),
            "token_id": ctx.token_id,
            **({"code": ctx.rejected[0], "why": ctx.rejected[1]} if ctx.rejected else {}),
        },
    )
