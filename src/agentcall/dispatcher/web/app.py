"""``GET /status`` (JSON), ``GET /metrics`` (Prometheus), ``GET /healthz`` (liveness),
``GET /readyz`` (readiness: 503 with its causes while the D cannot take new calls).

Every route, the console's included, answers only the ``Host`` names of ``allowed``
(:mod:`agentcall.dispatcher.web.hosts`: 400 or 421 otherwise).

A failure while answering is a 500 in the JSON error shape
(``{"error": {"code": "internal_error", "message", "hint"}}``), reported to ``on_error``
(which logs and counts it), never a bare text page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from agentcall.dispatcher.web.edge import Edge
from agentcall.dispatcher.web.hosts import LOOPBACK_NAMES, HostGuard
from agentcall.dispatcher.web.metrics import render, render_edge

Snapshot = Callable[[], Awaitable[dict[str, Any]]]
OnError = Callable[[Request, Exception], None]


def _ignore(request: Request, exc: Exception) -> None:
    """The default ``on_error``: the assembly passes one that logs and counts."""


def _no_registry() -> bytes:
    return b""


def build_app(
    snapshot: Snapshot,
    healthy: Callable[[], bool],
    on_error: OnError = _ignore,
    routes: Sequence[BaseRoute] = (),
    registry: Callable[[], bytes] = _no_registry,
    allowed: frozenset[str] = LOOPBACK_NAMES,
    edge: Edge | None = None,
) -> Starlette:
    """The HTTP app; ``routes`` are mounted beside the built-in ones (the console's);
    ``registry`` renders the process's own metrics, served after the snapshot's;
    ``allowed`` are the ``Host`` names answered
    (:func:`agentcall.dispatcher.web.hosts.allowed_hosts`); ``edge``, the port's
    connections, adds their figures to ``/metrics``."""

    async def status(request: Request) -> Response:
        return JSONResponse(await snapshot())

    async def metrics(request: Request) -> Response:
        body = render(await snapshot()) + registry()
        if edge is not None:
            body += render_edge(edge)
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def healthz(request: Request) -> Response:
        ok = healthy()
        return JSONResponse({"status": "ok" if ok else "failing"}, status_code=200 if ok else 503)

    async def readyz(request: Request) -> Response:
        verdict = (await snapshot())["readiness"]
        return JSONResponse(verdict, status_code=200 if verdict["ready"] else 503)

    async def failed(request: Request, exc: Exception) -> Response:
        on_error(request, exc)
        error = {
            "code": "internal_error",
            "message": f"{request.url.path} failed: {type(exc).__name__}",
            "hint": "retry; if it persists, read the dispatcher log (error.handled)",
        }
        return JSONResponse({"error": error}, status_code=500)

    return Starlette(
        routes=[
            Route("/status", status),
            Route("/metrics", metrics),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            *routes,
        ],
        exception_handlers={Exception: failed},
        middleware=[Middleware(HostGuard, allowed=allowed)],
    )
