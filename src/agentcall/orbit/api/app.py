"""The ASGI application: routes, the request-ID/error/log/metrics wrapper, health, metrics and
the OpenAPI document. `create_app(db, settings)` refuses to start on an unmigrated database."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from importlib import resources
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ExceptionHandler, Lifespan, Receive, Scope, Send

from agentcall.orbit.api import routes, submit_metrics
from agentcall.orbit.api.control_routes import ControlRoutes
from agentcall.orbit.api.errors import INTERNAL, wire_error
from agentcall.orbit.api.execution_service import ExecutionService, Wrap
from agentcall.orbit.api.http import envelope
from agentcall.orbit.api.log_metrics import LogCounter
from agentcall.orbit.api.transport import DRAIN
from agentcall.orbit.console.edge import ConsoleEdge
from agentcall.orbit.console.routes import Hooks, console_routes
from agentcall.orbit.domain.errors import NotFound, OrbitError, Unavailable
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.sessions import SessionTimes
from agentcall.orbit.execution.inspection import Inspection
from agentcall.orbit.settings import ServerSettings
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import require_current
from agentcall.orbit.store.token_cache import TokenCache
from agentcall.orbit.usecases.console_sessions import ConsoleSessions
from agentcall.orbit.usecases.operations import Operations

log = logging.getLogger("orbit.api")
CLIENT_CLOSED = 499  # the client closed the connection before the answer (nginx's code)
STOP_TIMEOUT_S = 15.0  # the execution side's stop at shutdown (after the graceful HTTP stop)
# the collector's young-generation threshold once started (CPython's default: 700 new objects).
# A busy server allocates thousands of short-lived containers a second, nearly all freed by
# their reference counts; at 700 the collector ran some 25 times a second and took 3-4 % of
# the server's CPU in bench/orbit_workers.py's submit phase, at 10,000 under 1 %. Cycles are
# still collected, only less often.
YOUNG_GC_THRESHOLD = 10_000
Handler = Callable[[Request, routes.Context], Awaitable[Response]]


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
    """Starlette, with `POST /v1/tasks` (the hot path) served before Starlette's middleware
    stack and router: the same endpoint as the route (the same `Request`, handler, error
    envelope, metrics and access line), so the same response, without the per-request cost of
    the two exception middlewares, route matching and wrapped `send` callables (`submit`;
    None: served through the router like every other route). `state.inspection`: the engine's
    waiters and counts, for tests and tools."""

    def __init__(
        self,
        submit: Callable[[Request], Awaitable[Response]] | None,
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
        self.submit = submit
        self.state.inspection = inspection

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.submit is not None
            and scope["type"] == "http"
            and scope["path"] == SUBMIT_PATH
            and scope["method"] == "POST"
            and not scope.get("root_path")
        ):
            scope["app"] = self
            response = await self.submit(Request(scope, receive))
            await response(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(
    db: Database, settings: ServerSettings | None = None, *, fast_submit: bool = True
) -> OrbitApp:
    """The app of one server process, built from `settings` (default: `ServerSettings()`).
    `fast_submit=False` serves `POST /v1/tasks` through the router like every other route
    (the tests compare both)."""
    settings = settings or ServerSettings()
    metrics = Metrics()
    execution = ExecutionService(db, settings.execution, registry=metrics.registry)
    ops = Operations(
        db,
        token_cache=TokenCache(settings.token_cache_ms / 1000),
        submit_lanes=settings.submit_lanes,
        on_accepted=execution.on_accepted,
        handoff=execution.handoff,
    )
    submit_metrics.register(metrics.registry, ops)
    control = ControlRoutes(
        execution.hub.tell_cancel, execution.hub.notify, changed=execution.waiters.wake
    )
    hooks = Hooks(execution.hub.tell_cancel, execution.hub.notify, execution.waiters.wake)
    console = settings.console
    times = SessionTimes(timedelta(seconds=console.idle_s), timedelta(seconds=console.max_age_s))
    sessions = ConsoleSessions(db, times, ops.authenticate)
    endpoint = _endpoints(ops, metrics, settings.access_log)
    submit = endpoint("submit", routes.submit_task)
    app = OrbitApp(
        submit if fast_submit else None,
        execution.inspection,
        routes=[
            Route(SUBMIT_PATH, submit, methods=["POST"]),
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
            Route(
                "/v1/tasks/{task_id}",
                endpoint("get", execution.inspection_routes.get_task),
                methods=["GET"],
            ),
            *execution.routes(endpoint, ops),
            *_service_routes(metrics, execution.gauges.refresh),
            *console_routes(
                ops, sessions, execution.inspection, hooks, execution.gauges.failures.inc
            ),
        ],
        exception_handlers={HTTPException: _not_found(ops)},
        lifespan=_lifespan(db, execution, LogCounter(metrics.registry)),
        middleware=[Middleware(ConsoleEdge, console.allowed_hosts, console.trusted_proxies)],
    )
    return app


def _endpoints(ops: Operations, metrics: Metrics, access_log: bool) -> Wrap:
    """The wrapper of every route: request ID, error envelope, metrics and the access line."""

    def endpoint(name: str, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            started = time.perf_counter()
            ctx = routes.Context(new_id(), ops)
            try:
                response = await handler(request, ctx)
            except ClientDisconnect:  # nobody to answer: not a failure of the server
                ctx.rejected = ("CLIENT_CLOSED", "the client closed the connection")
                response = Response(status_code=CLIENT_CLOSED)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a wire error
                response = _error(ctx, request, exc)
            elapsed = time.perf_counter() - started
            metrics.observe(name, response.status_code, elapsed)
            if access_log:
                _access(request, response, ctx, name, elapsed)
            return response

        return run

    return endpoint


def _not_found(ops: Operations) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def not_found(request: Request, exc: Exception) -> Response:
        ctx = routes.Context(new_id(), ops)
        return _error(ctx, request, NotFound("no such route; see /openapi.json"))

    return not_found


def _service_routes(metrics: Metrics, refresh: Callable[[], Awaitable[None]]) -> list[Route]:
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


def _lifespan(
    db: Database, execution: ExecutionService, counter: LogCounter
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[dict[str, Any]]]:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        counter.attach()  # every warning and error Orbit logs is counted
        await require_current(db)
        await execution.start()
        # what startup made (modules, SQLAlchemy's tables and compiled caches) leaves the
        # collector's generations: the collections requests trigger no longer scan it
        gc.freeze()
        gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
        log.info("orbit api ready", extra={"dialect": db.dialect.value})
        yield {DRAIN: execution.waiters.drain}  # called when a graceful stop begins
        try:  # bounded: an unreachable database must not keep a stopping server alive
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await execution.stop()
        except TimeoutError:
            log.error(
                "the execution loops did not stop within %.0f s; exiting anyway "
                "(leases of this process expire on their own)",
                STOP_TIMEOUT_S,
            )
        await db.close()
        counter.detach()

    return lifespan


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
