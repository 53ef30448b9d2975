"""`GET /v1/queues/{id}` (a queue's flow settings, running per concurrency key, waiting by
reason) and `PATCH /v1/queues/{id}` (replace its flow settings, conditional on their revision),
docs/orbit/flow-control.md. Same envelope, auth and strict rules as the task API."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api.http import envelope, query, read_json_body
from agentcall.orbit.api.routes import NO_PARAMS, Context
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.flow_settings import QueueFlow, settings_view
from agentcall.orbit.domain.flow_status import status_view
from agentcall.orbit.domain.ids import is_id
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.usecases.queue_flow import QueueReport, read_queue, set_queue_flow


def queue_view(queue_id: str, report: QueueReport) -> dict[str, JsonValue]:
    data: dict[str, JsonValue] = {
        "id": queue_id,
        "name": report.name,
        "flow_revision": str(report.flow.revision),
        "flow": settings_view(report.flow.settings),
    }
    if report.status is not None:
        data.update(status_view(report.status))
    return data


def _queue_id(request: Request) -> str:
    text = request.path_params["queue_id"]
    if not is_id(text):
        raise NotFound("queue not found")
    return str(text)


class QueueRoutes:
    """`changed(flow)`: a settings change committed here (the lease path applies it at once
    in this process, and a lease round runs for the queue)."""

    def __init__(self, changed: Callable[[QueueFlow], None]) -> None:
        self.changed = changed

    async def get(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        queue_id = _queue_id(request)
        query(request, NO_PARAMS)
        report = await read_queue(ctx.ops.db, principal, queue_id)
        return envelope(ctx.request_id, 200, data=queue_view(queue_id, report))

    async def patch(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.QUEUE_ADMIN)
        queue_id = _queue_id(request)
        query(request, NO_PARAMS)
        body = await read_json_body(request)
        saved = await set_queue_flow(ctx.ops.db, principal, queue_id, body)
        self.changed(saved)
        report = await read_queue(ctx.ops.db, principal, queue_id, Permission.QUEUE_ADMIN)
        return envelope(ctx.request_id, 200, data=queue_view(queue_id, report))
