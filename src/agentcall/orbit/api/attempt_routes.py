"""GET /v1/tasks/{task_id}/attempts and /attempts/{attempt_id}: thin handlers in the style of
`agentcall.orbit.api.routes` (same Context, envelope and error table)."""

from __future__ import annotations

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
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.usecases import history

PAGE_PARAMS = frozenset({"limit", "cursor"})
NO_PARAMS: frozenset[str] = frozenset()


async def list_attempts(request: Request, ctx: Context) -> Response:
    principal = await ctx.principal(request, Permission.READ)
    task_id = task_id_from_path(request.path_params["task_id"])
    params = query(request, PAGE_PARAMS)
    limit = _limit(params.get("limit"))
    cursor = params.get("cursor")
    after = 0 if cursor is None else decode_cursor(cursor, task_id)

    rows = await history.attempt_page(ctx.ops, principal, task_id, after, limit + 1)
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

    row, items = await history.attempt_with_evidence(ctx.ops, principal, task_id, attempt_id)
    view = attempt_view(row)
    view["evidence"] = [evidence_view(item) for item in items]
    return envelope(ctx.request_id, 200, data=view)


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    digits = text.isascii() and text.isdigit() and len(text) <= 3
    if not digits or text.startswith("0") or int(text) > MAX_LIMIT:
        raise InvalidArgument(f"must be an integer 1-{MAX_LIMIT}", "limit")
    return int(text)
