"""The bulk operation endpoints (docs/orbit/bulk.md): preview, start, list, get,
an operation's tasks and cancel. Each is thin: read and check the request, call one use case,
write the envelope; a start wakes this process's runner (`agentcall.orbit.assembly.bulk_runner`)."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api.http import envelope, query, read_json_body, single_header
from agentcall.orbit.api.routes import NO_PARAMS, Context, parse_limit
from agentcall.orbit.domain.bulk import (
    BulkState,
    decode_list_cursor,
    encode_list_cursor,
    operation_view,
    parse_bulk,
    parse_outcome,
    parse_seq_cursor,
)
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.idempotency import check_key
from agentcall.orbit.domain.ids import is_id
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.search import filter_json
from agentcall.orbit.domain.task import summary_view
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.usecases.audit import record
from agentcall.orbit.usecases.bulk_cancel import cancel_bulk
from agentcall.orbit.usecases.bulk_reads import bulk_tasks, get_bulk, list_bulk
from agentcall.orbit.usecases.bulk_start import preview_bulk, start_bulk

PAGE_PARAMS = frozenset({"limit", "cursor"})
TASK_PARAMS = frozenset({"limit", "cursor", "outcome"})


class BulkRoutes:
    def __init__(self, wake: Callable[[], None]) -> None:
        self.wake = wake  # the runner of this process: an operation was started

    async def preview(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        query(request, NO_PARAMS)
        bulk = parse_bulk(await read_json_body(request))
        found = await preview_bulk(ctx.ops.bulk, principal, bulk)
        data: dict[str, JsonValue] = {
            "matched": found.matched,
            "more": found.more,
            "sample": [summary_view(item) for item in found.sample],
        }
        return envelope(ctx.request_id, 200, data=data)

    async def start(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        query(request, NO_PARAMS)
        body = await read_json_body(request)
        key = check_key(single_header(request, "idempotency-key"))
        bulk = parse_bulk(body)
        started = await start_bulk(ctx.ops.bulk, principal, bulk, key, ctx.request_id)
        if not started.deduplicated:
            self.wake()
            op = started.operation
            detail: dict[str, JsonValue] = {
                "action": op.action.value,
                "filter": dict(filter_json(op.filter)),
                "matched": op.progress.matched,
            }
            await record(ctx.ops.store, principal, "bulk.create", "bulk_operation", op.id, detail)
        data: dict[str, JsonValue] = {
            "deduplicated": started.deduplicated,
            "operation": operation_view(started.operation),
        }
        return envelope(ctx.request_id, started.status, data=data)

    async def list(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        params = query(request, PAGE_PARAMS)
        limit = parse_limit(params.get("limit"))
        cursor = params.get("cursor")
        after = None if cursor is None else decode_list_cursor(cursor)
        found = await list_bulk(ctx.ops.bulk, principal, after, limit + 1)
        data: dict[str, JsonValue] = {"items": [operation_view(op) for op in found[:limit]]}
        if len(found) > limit:
            data["next_cursor"] = encode_list_cursor(found[limit - 1])
        return envelope(ctx.request_id, 200, data=data)

    async def get(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        operation_id = _operation_id(request)
        query(request, NO_PARAMS)
        op = await get_bulk(ctx.ops.bulk, principal, operation_id)
        return envelope(ctx.request_id, 200, data=operation_view(op))

    async def tasks(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        operation_id = _operation_id(request)
        params = query(request, TASK_PARAMS)
        limit = parse_limit(params.get("limit"))
        outcome = parse_outcome(params.get("outcome"))
        after = parse_seq_cursor(params.get("cursor"))
        bulks = ctx.ops.bulk
        found = await bulk_tasks(bulks, principal, operation_id, outcome, after, limit + 1)
        items: list[JsonValue] = [
            {
                "task_id": item.task_id,
                "expected_revision": str(item.revision),
                "outcome": None if item.outcome is None else item.outcome.value,
                "message": item.message,
            }
            for item in found[:limit]
        ]
        data: dict[str, JsonValue] = {"items": items}
        if len(found) > limit:
            data["next_cursor"] = str(found[limit - 1].seq)
        return envelope(ctx.request_id, 200, data=data)

    async def cancel(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.READ)
        operation_id = _operation_id(request)
        query(request, NO_PARAMS)
        op = await cancel_bulk(ctx.ops.bulk, principal, operation_id)
        if op.state is BulkState.CANCELLED:
            detail: dict[str, JsonValue] = {"action": op.action.value, "done": op.progress.done}
            await record(ctx.ops.store, principal, "bulk.cancel", "bulk_operation", op.id, detail)
        return envelope(ctx.request_id, 200, data=operation_view(op))


def _operation_id(request: Request) -> str:
    """A malformed ID in a path names no operation: 404, like a missing one."""
    text = request.path_params["operation_id"]
    if not is_id(text):
        raise NotFound("bulk operation not found")
    return str(text)
