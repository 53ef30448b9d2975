"""The inspection endpoints: `GET /v1/queues`, `GET /v1/workers`, the long-poll
`GET /v1/tasks/{id}?wait_ms=` (without `wait_ms` it is the plain get of
`agentcall.orbit.api.routes`), and `GET /readyz`. Same envelope, auth and strict rules as the task
API."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api import routes
from agentcall.orbit.api.http import envelope, query
from agentcall.orbit.api.routes import NO_PARAMS, Context
from agentcall.orbit.domain.errors import InvalidArgument, OrbitError
from agentcall.orbit.domain.ids import task_id_from_path
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.task import task_view
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.execution.inspection import MAX_WAIT_MS, Inspection

log = logging.getLogger("orbit.api")
WAIT_PARAMS = frozenset({"wait_ms"})
READY_TIMEOUT_S = 2.0


class InspectionRoutes:
    def __init__(self, inspection: Inspection) -> None:
        self.inspection = inspection

    async def queues(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        query(request, NO_PARAMS)
        views = await self.inspection.queues(principal)
        items: list[JsonValue] = [view.view() for view in views]
        return envelope(ctx.request_id, 200, data={"items": items})

    async def workers(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        query(request, NO_PARAMS)
        items: list[JsonValue] = list(await self.inspection.workers(principal))
        return envelope(ctx.request_id, 200, data={"items": items})

    async def get_task(self, request: Request, ctx: Context) -> Response:
        """With `wait_ms`: answer once the task is settled or the wait ends."""
        if b"wait_ms" not in request.scope["query_string"]:
            return await routes.get_task(request, ctx)
        principal = await ctx.principal(request, Permission.READ)
        task_id = task_id_from_path(request.path_params["task_id"])
        wait_ms = parse_wait_ms(query(request, WAIT_PARAMS).get("wait_ms"))
        gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watching = asyncio.create_task(_until_disconnected(request, gone))
        try:
            task = await self.inspection.wait(ctx.ops, principal, task_id, wait_ms, gone)
        finally:
            watching.cancel()
        return envelope(ctx.request_id, 200, data=task_view(task))


async def _until_disconnected(request: Request, gone: asyncio.Future[None]) -> None:
    """Resolve `gone` when the client closes the connection: its long-poll ends at once
    instead of waiting out `wait_ms` for nobody (the request has no body to read first)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    if not gone.done():
        gone.set_result(None)


def parse_wait_ms(text: str | None) -> int:
    """An integer literal 0-60000 (no sign, no leading zero, no exponent)."""
    if text is None:
        return 0
    valid = text.isascii() and text.isdigit() and len(text) <= 5
    if not valid or (text.startswith("0") and text != "0") or int(text) > MAX_WAIT_MS:
        raise InvalidArgument(f"must be an integer 0-{MAX_WAIT_MS} (milliseconds)", "wait_ms")
    return int(text)


def readiness(
    check: Callable[[], Awaitable[None]], on_failure: Callable[[], None]
) -> Callable[[Request], Awaitable[Response]]:
    """`GET /readyz`: 200 when the database answers and is at the schema this program needs
    (`check`: `agentcall.orbit.store.migrate.require_current` on the server's database), else 503
    with the reason; each check has a short timeout and uses a fresh pool checkout, so it turns 200
    again when the database is back, without a restart."""

    async def ready(request: Request) -> Response:
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                await check()
        except TimeoutError:
            return _not_ready(f"the database did not answer within {READY_TIMEOUT_S:g} s")
        except OrbitError as exc:
            return _not_ready(exc.message)
        except Exception as exc:  # noqa: BLE001 - any driver failure means "not ready"
            on_failure()
            log.warning("readiness check failed", extra={"why": type(exc).__name__})
            return _not_ready(f"the database is unreachable ({type(exc).__name__})")
        return Response(b'{"status":"ready"}', media_type="application/json")

    return ready


def _not_ready(reason: str) -> Response:
    body = dumps({"status": "unavailable", "reason": reason})
    return Response(body.encode("utf-8"), status_code=503, media_type="application/json")
