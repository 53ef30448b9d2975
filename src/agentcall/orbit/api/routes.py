"""Submit, get and list of Task API v1 (cancel, retry, resolve and batch: `control_routes`).
Each is thin: read and check the request, call one store operation, write the envelope.
Errors are raised and mapped by `app.endpoint`."""

from __future__ import annotations

from functools import partial

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api.http import (
    envelope,
    query,
    read_json_body,
    receipt_envelope,
    single_header,
)
from agentcall.orbit.domain.cursor import decode_cursor, encode_cursor
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.idempotency import check_key
from agentcall.orbit.domain.ids import task_id_from_path
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.search import FILTER_FIELDS, parse_filter
from agentcall.orbit.domain.submit import SubmitRequest, parse_submit
from agentcall.orbit.domain.task import summary_view, task_view
from agentcall.orbit.domain.tokens import Permission, Principal, bearer_secret
from agentcall.orbit.telemetry import spans
from agentcall.orbit.usecases.operations import Operations, Receipt
from agentcall.orbit.usecases.search import search_tasks

NO_PARAMS: frozenset[str] = frozenset()
LIST_PARAMS = FILTER_FIELDS | {"limit", "cursor"}  # the search filter (domain/search.py)
DEFAULT_LIMIT, MAX_LIMIT = 20, 100


class Context:
    """What every handler gets: the request ID and the store operations."""

    def __init__(self, request_id: str, ops: Operations) -> None:
        self.request_id = request_id
        self.ops = ops
        self.token_id: str | None = None
        self.rejected: tuple[str, str] | None = None  # (code, message) for the access log

    async def principal(self, request: Request, permission: Permission) -> Principal:
        principal = await self.ops.authenticate(bearer_secret(_authorization(request)))
        self.token_id = principal.token_id
        principal.require(permission)
        return principal

    def receipt(self, receipt: Receipt) -> Response:
        """`{"deduplicated": ..., "task": ...}` (`http.receipt_envelope`)."""
        return receipt_envelope(
            self.request_id, receipt.status, receipt.deduplicated, receipt.task_text
        )


def _authorization(request: Request) -> str | None:
    values = request.headers.getlist("authorization")
    return values[0] if len(values) == 1 else None


async def submit_task(request: Request, ctx: Context) -> Response:
    principal = await ctx.principal(request, Permission.SUBMIT)
    query(request, NO_PARAMS)
    body = await read_json_body(request)
    key = check_key(single_header(request, "idempotency-key"))
    submit = parse_submit(body)
    if spans.on():  # tracing off: this check is all it costs (docs/orbit/tracing.md)
        return await spans.submit(request.headers, submit, partial(_accept, ctx, principal, key))
    return ctx.receipt(await ctx.ops.submit(principal, submit, key, ctx.request_id))


async def _accept(ctx: Context, principal: Principal, key: str, submit: SubmitRequest) -> Response:
    return ctx.receipt(await ctx.ops.submit(principal, submit, key, ctx.request_id))


async def get_task(request: Request, ctx: Context) -> Response:
    principal = await ctx.principal(request, Permission.READ)
    task_id = task_id_from_path(request.path_params["task_id"])
    query(request, NO_PARAMS)
    task = await ctx.ops.get(principal, task_id)
    return envelope(ctx.request_id, 200, data=task_view(task))


async def list_tasks(request: Request, ctx: Context) -> Response:
    principal = await ctx.principal(request, Permission.READ)
    params = query(request, LIST_PARAMS)
    limit = parse_limit(params.pop("limit", None))
    cursor = params.pop("cursor", None)
    where = parse_filter(params)
    filters = where.digest()
    after = None if cursor is None else decode_cursor(cursor, where.queue_id, where.state, filters)
    page = await search_tasks(ctx.ops.db, principal, where, after, limit)
    data: dict[str, JsonValue] = {"items": [summary_view(item) for item in page.items]}
    if page.next_position is not None:
        data["next_cursor"] = encode_cursor(page.next_position)
    return envelope(ctx.request_id, 200, data=data)


def parse_limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    digits = text.isascii() and text.isdigit() and len(text) <= 3
    if not digits or text.startswith("0") or int(text) > MAX_LIMIT:
        raise InvalidArgument(f"must be an integer 1-{MAX_LIMIT}", "limit")
    return int(text)
