"""The inspection endpoints: `GET /v1/queues`, `GET /v1/workers`, the long-poll
`GET /v1/tasks/{id}?wait_ms=` (without `wait_ms` it is the plain get of
`agentcall.orbit.api.routes`), and `GET /readyz`. Same envelope, auth and strict rules as the task
API."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api.http import envelope, query
from agentcall.orbit.api.routes import NO_PARAMS, Context
from agentcall.orbit.domain.errors import InvalidArgument, OrbitError
from agentcall.orbit.domain.ids import task_id_from_path
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task, task_view
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.execution.inspection import MAX_WAIT_MS, Inspection
from agentcall.orbit.usecases.queue_flow import task_waiting_reason

log = logging.getLogger("orbit.api")
WAIT_PARAMS = frozenset({"wait_ms"})
READY_TIMEOUT_S = 2.0


class InspectionRoutes:
    """`controls(queue_id)`: the queue has flow settings (its WAITING tasks show their
    `waiting_reason`); queues without them pay nothing for it."""

    def __init__(
        self, inspection: Inspection, controls: Callable[[str], bool] = lambda queue_id: False
    ) -> None:
        self.inspection = inspection
        self.controls = controls

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
            principal = await ctx.principal(request, Permission.READ)
            task_id = task_id_from_path(request.path_params["task_id"])
            query(request, NO_PARAMS)
            return await self._answer(ctx, await ctx.ops.get(principal, task_id))
        principal = await ctx.principal(request, Permission.READ)
        task_id = task_id_from_path(request.path_params["task_id"])
        wait_ms = parse_wait_ms(query(request, WAIT_PARAMS).get("wait_ms"))
        gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watching = asyncio.create_task(_until_disconnected(request, gone))
        try:
            task = await self.inspection.wait(ctx.ops, principal, task_id, wait_ms, gone)
        finally:
            watching.cancel()
        return await self._answer(ctx, task)

    async def _answer(self, ctx: Context, task: Task) -> Response:
        view = task_view(task)
        if task.state is TaskState.WAITING and self.controls(task.queue_id):
            reason = await ctx.ops.db.retrying(
                lambda: task_waiting_reason(ctx.ops.db, task, datetime.now(UTC))
            )
            if reason is not None:
                view["waiting_reason"] = reason.value
        return envelope(ctx.request_id, 200, data=view)


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
