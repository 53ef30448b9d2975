"""GET /v1/tasks/{task_id}/attempts and /attempts/{attempt_id}: thin handlers in the style of
`orbit.api.routes` (same Context, envelope and error table)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api.history import (
    attempt_view,
    decode_cursor,
    encode_cursor,
    evidence_view,
)
from agentcall.orbit.api.http import envelope, query
from agentcall.orbit.api.routes import DEFAULT_LIMIT, MAX_LIMIT, Context
from agentcall.orbit.domain.errors import InvalidArgument, NotFound
from agentcall.orbit.domain.ids import is_id, task_id_from_path
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store import attempts

PAGE_PARAMS = frozenset({"limit", "cursor"})
NO_PARAMS: frozenset[str] = frozenset()


async def list_attempts(request: Request, ctx: Context) -> Response:
    principal = await ctx.principal(request, Permission.READ)
    task_id = task_id_from_path(request.path_params["task_id"])
    params = query(request, PAGE_PARAMS)
    limit = _limit(params.get("limit"))
    cursor = params.get("cursor")
    after = 0 if cursor is None else decode_cursor(cursor, task_id)

    async def once() -> list[Any]:
        async with ctx.ops.db.read() as conn:
            await _visible(conn, principal, task_id)
            return await attempts.attempt_page(conn, task_id, after, limit + 1)

    rows = await ctx.ops.db.retrying(once)
    data: dict[str, JsonValue] = {"items": [attempt_view(row) for row in rows[:limit]]}
    if len(rows) > limit:
        data["next_cursor"] = encode_cursor(task_id, rows[limit - 1].number)
    return envelope(ctx.request_id, 200, data=data)


async def get_attempt(request: Request, ctx: Context) -> Response:
    principal = await ctx.principal(request, Permission.READ)
    task_id = task_id_from_path(request.path_params["task_id"])
    attempt_id = request.path_params["attempt_id"]
    query(request, NO_PARAMS)
    if not is_id(attempt_id):
        raise NotFound("attempt not found")

    async def once() -> dict[str, JsonValue]:
        async with ctx.ops.db.read() as conn:
            await _visible(conn, principal, task_id)
            row = await attempts.attempt(conn, task_id, attempt_id)
            if row is None:
                raise NotFound("attempt not found")
            items = await attempts.evidence(conn, attempt_id)
            view = attempt_view(row)
            view["evidence"] = [evidence_view(item) for item in items]
            return view

    return envelope(ctx.request_id, 200, data=await ctx.ops.db.retrying(once))


async def _visible(conn: AsyncConnection, principal: Principal, task_id: str) -> None:
    row = await attempts.task_scope(conn, task_id)
    if row is None:
        raise NotFound("task not found")
    principal.require_visible(row.namespace_id, row.queue_id)


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    digits = text.isascii() and text.isdigit() and len(text) <= 3
    if not digits or text.startswith("0") or int(text) > MAX_LIMIT:
        raise InvalidArgument(f"must be an integer 1-{MAX_LIMIT}", "limit")
    return int(text)
