"""The ASGI application's parts: the app (`OrbitApp`), the request-ID/error/log/metrics wrapper
of every route (`endpoints`), health, metrics and the OpenAPI document. The server is assembled
from them in one place, `agentcall.orbit.assembly.server.create_app`."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, ExceptionHandler, Lifespan, Receive, Scope, Send

from agentcall.orbit.api import routes
from agentcall.orbit.api.audit_routes import request_source
from agentcall.orbit.api.errors import INTERNAL, wire_error
from agentcall.orbit.api.http import envelope
from agentcall.orbit.domain.audit import bind_source, reset_source
from agentcall.orbit.domain.errors import NotFound, OrbitError, Unavailable
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.execution.inspection import Inspection
from agentcall.orbit.usecases.operations import Operations

log = logging.getLogger("orbit.api")
CLIENT_CLOSED = 499  # the client closed the connection before the answer (nginx's code)
Handler = Callable[[Request, routes.Context], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]
Wrap = Callable[[str, Handler], Endpoint]  # a route's handler wrapped by `endpoints`


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "orbit_http_requests",
            "HTTP requests by route and status",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "orbit_http_request_seconds",
            "HTTP request latency by route",
            ["route"],
            registry=self.registry,
            buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
        )
        # the labelled children, looked up once (`labels()` validates and locks every call)
        self._counts: dict[tuple[str, int], Counter] = {}
        self._latencies: dict[str, Histogram] = {}

    def observe(self, route: str, status: int, seconds: float) -> None:
        count = self._counts.get((route, status))
        if count is None:
            count = self._counts[(route, status)] = self.requests.labels(route, str(status))
        latency = self._latencies.get(route)
        if latency is None:
            latency = self._latencies[route] = self.latency.labels(route)
        count.inc()
        latency.observe(seconds)


def openapi_text() -> bytes:
    return resources.files("agentcall.orbit.api").joinpath("openapi.json").read_bytes()


SUBMIT_PATH = "/v1/tasks"


class OrbitApp(Starlette):
    """Starlette, whose `POST /v1/tasks` (the hot path) goes from the server straight to
    Starlette's router: the same route matching, `Request` and endpoint as every route (its
    wrapper answers every exception itself: error envelope, metrics, access line), without
    the middleware stack in front of the router (the two exception middlewares and the
    console's edge, which guards /ui only). Measured in process on a submit refused before
    any database work (401; 25 interleaved rounds of 2,000, fastest round): 11 µs calling the
    endpoint directly, 18 µs through the router, 19-45 µs (fastest-median) through the whole
    stack. `submit`: that entry (None: served through the stack like every other route).
    `state.inspection`: the engine's waiters and counts, for tests and tools."""

    def __init__(
        self,
        fast_submit: bool,
        inspection: Inspection,
        routes: Sequence[BaseRoute],
        exception_handlers: Mapping[Any, ExceptionHandler],
        lifespan: Lifespan[Starlette],
        middleware: Sequence[Middleware] = (),
    ) -> None:
        super().__init__(
            routes=routes,
            exception_handlers=exception_handlers,
            lifespan=lifespan,
            middleware=middleware,
        )
        self.submit: ASGIApp | None = self._routed if fast_submit else None
        self._no_handlers: tuple[dict[Any, Any], dict[Any, Any]] = ({}, {})
        self.state.inspection = inspection

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.submit is not None
            and scope["type"] == "http"
            and scope["path"] == SUBMIT_PATH
            and scope["method"] == "POST"
            and not scope.get("root_path")
        ):
            await self.submit(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def _routed(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["app"] = self
        # what Starlette's ExceptionMiddleware puts there for the routes' own handlers
        scope["starlette.exception_handlers"] = self._no_handlers
        await self.router(scope, receive, send)


def endpoints(ops: Operations, metrics: Metrics, access_log: bool) -> Wrap:
    """The wrapper of every route: request ID, error envelope, metrics and the access line."""

    def endpoint(name: str, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            started = time.perf_counter()
            ctx = routes.Context(new_id(), ops)
            bound = bind_source(request_source(request, ctx.request_id))
            try:
                response = await handler(request, ctx)
            except ClientDisconnect:  # nobody to answer: not a failure of the server
                ctx.rejected = ("CLIENT_CLOSED", "the client closed the connection")
                response = Response(status_code=CLIENT_CLOSED)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a wire error
                response = _error(ctx, request, exc)
            finally:
                reset_source(bound)
            elapsed = time.perf_counter() - started
            metrics.observe(name, response.status_code, elapsed)
            if access_log:
                _access(request, response, ctx, name, elapsed)
            return response

        return run

    return endpoint


def not_found(ops: Operations) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def not_found(request: Request, exc: Exception) -> Response:
        ctx = routes.Context(new_id(), ops)
        return _error(ctx, request, NotFound("no such route; see /openapi.json"))

    return not_found


def service_routes(metrics: Metrics, refresh: Callable[[], Awaitable[None]]) -> list[Route]:
    """The OpenAPI document, health and Prometheus metrics (`refresh`: the gauges computed
    from the database, cached, brought up to date before each scrape)."""
    document = openapi_text()

    async def openapi(request: Request) -> Response:
        return Response(document, media_type="application/json")

    async def health(request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    async def metrics_page(request: Request) -> Response:
        await refresh()  # never raises: on failure the scrape shows the last values
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", health, methods=["GET"]),
        Route("/metrics", metrics_page, methods=["GET"]),
    ]


def _error(ctx: routes.Context, request: Request, exc: Exception) -> Response:
    """The wire error of `exc`. 503 only when the database failed (retry with the same key);
    an unexpected exception is a defect of the server: 500 INTERNAL, logged with its
    traceback and request ID (and counted: orbit_http_requests_total{status="500"},
    orbit_log_messages_total{level="error"})."""
    wire = wire_error(exc)
    if isinstance(exc, OrbitError) and not isinstance(exc, Unavailable):
        message = exc.message
    elif wire is INTERNAL:
        message = (
            f"internal error; the request was not completed. Retrying will not help: "
            f"report request_id {ctx.request_id}"
        )
        log.error(
            "request failed: internal error", exc_info=exc, extra={"request_id": ctx.request_id}
        )
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
