"""The task control endpoints (docs/orbit/task-control.md): cancel in every live state, manual
retry, resolve, batch submit. Each is thin: read and check the request, call one store operation,
write the envelope; after a committed cancel of a running attempt, tell its worker."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api.http import JSON_MEDIA_TYPE, envelope, query, read_json_body, single_header
from agentcall.orbit.api.routes import NO_PARAMS, Context
from agentcall.orbit.domain.batch import BatchInvalid, parse_batch
from agentcall.orbit.domain.cancel import parse_cancel
from agentcall.orbit.domain.idempotency import check_key
from agentcall.orbit.domain.ids import task_id_from_path
from agentcall.orbit.domain.jsonvalue import JsonValue, RawJson, dumps
from agentcall.orbit.domain.review import parse_resolve, parse_retry
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.usecases.batch_submit import submit_batch
from agentcall.orbit.usecases.cancel import cancel_task
from agentcall.orbit.usecases.resolve import resolve_task
from agentcall.orbit.usecases.retry import retry_task
from agentcall.orbit.usecases.task_writes import Written


class ControlRoutes:
    """`tell_cancel(attempt_id)` pushes a committed cancel to the worker; `wake(*queue_ids)`
    tells the dispatcher that tasks became WAITING in these queues (a batch) or somewhere (a
    retry: no queue named, the next round asks every queue)."""

    def __init__(
        self,
        tell_cancel: Callable[[str], None],
        wake: Callable[..., None],
        changed: Callable[[str], None] = lambda task_id: None,
    ) -> None:
        self.tell_cancel = tell_cancel
        self.wake = wake
        self.changed = changed  # whoever waits for this task (long-poll) reads it again

    async def cancel(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.CANCEL)
        task_id, body, key = await _write_request(request)
        cancel = parse_cancel(body)
        written = await cancel_task(ctx.ops.store, principal, task_id, cancel, key, ctx.request_id)
        if written.tell_worker is not None:
            self.tell_cancel(written.tell_worker)
        self.changed(task_id)
        return _receipt(ctx, written)

    async def retry(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.REVIEW)
        task_id, body, key = await _write_request(request)
        retry = parse_retry(body)
        written = await retry_task(ctx.ops.store, principal, task_id, retry, key, ctx.request_id)
        if not written.deduplicated:
            self.wake()
        return _receipt(ctx, written)

    async def resolve(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, Permission.REVIEW)
        task_id, body, key = await _write_request(request)
        resolve = parse_resolve(body)
        store = ctx.ops.store
        written = await resolve_task(store, principal, task_id, resolve, key, ctx.request_id)
        self.changed(task_id)
        return _receipt(ctx, written)

    async def batch(self, request: Request, ctx: Context) -> Response:
        """All or nothing; an invalid item answers 400 with every bad item in `error.items`."""
        principal = await ctx.principal(request, Permission.SUBMIT)
        query(request, NO_PARAMS)
        body = await read_json_body(request)
        key = check_key(single_header(request, "idempotency-key"))
        try:
            batch = parse_batch(body)
            receipt = await submit_batch(ctx.ops.db, principal, batch, key, ctx.request_id)
        except BatchInvalid as exc:
            return _invalid_batch(ctx, exc)
        if not receipt.deduplicated:
            self.wake(*{item.queue_id for item in batch.items})
        data: dict[str, JsonValue] = {
            "deduplicated": receipt.deduplicated,
            "items": RawJson(receipt.items_text),
        }
        return envelope(ctx.request_id, receipt.status, data=data)


def _invalid_batch(ctx: Context, exc: BatchInvalid) -> Response:
    items: list[JsonValue] = [
        {"index": e.index, **({"field": e.field} if e.field else {}), "message": e.message}
        for e in exc.items
    ]
    ctx.rejected = ("INVALID_ARGUMENT", exc.message)
    error: dict[str, JsonValue] = {
        "code": "INVALID_ARGUMENT",
        "message": exc.message,
        "items": items,
    }
    body = dumps({"request_id": ctx.request_id, "error": error}).encode("utf-8")
    return Response(
        body, status_code=400, media_type=JSON_MEDIA_TYPE, headers={"X-Request-ID": ctx.request_id}
    )


async def _write_request(request: Request) -> tuple[str, JsonValue, str]:
    """Path task ID, no query parameters, strict JSON body, Idempotency-Key: in this order,
    so that errors are reported like the cancel endpoint's."""
    task_id = task_id_from_path(request.path_params["task_id"])
    query(request, NO_PARAMS)
    body = await read_json_body(request)
    return task_id, body, check_key(single_header(request, "idempotency-key"))


def _receipt(ctx: Context, written: Written) -> Response:
    data: dict[str, JsonValue] = {
        "deduplicated": written.deduplicated,
        "task": RawJson(written.task_text),
    }
    return envelope(ctx.request_id, written.status, data=data)
