"""The schedule endpoints (docs/orbit/schedules.md): create, list, get, patch, delete, pause,
resume, trigger, backfill, next nominal times and recent firings. Same envelope, bearer
tokens, strict JSON, error table and revision rules as the task API; each handler reads and
checks the request, calls one use case and writes the envelope. `changed(schedule_id)` is
called after a committed change that can move a schedule's next firing (the firing loop
looks again)."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api.http import envelope, query, read_json_body, single_header
from agentcall.orbit.api.routes import NO_PARAMS, Context
from agentcall.orbit.domain.errors import InvalidArgument, NotFound
from agentcall.orbit.domain.ids import check_id, is_id
from agentcall.orbit.domain.jsonvalue import JsonValue, RawJson
from agentcall.orbit.domain.numbers import parse_decimal_uint64
from agentcall.orbit.domain.schedule_cursor import decode_schedule_cursor, encode_schedule_cursor
from agentcall.orbit.domain.schedule_plan import ScheduleState
from agentcall.orbit.domain.schedule_request import parse_state_change
from agentcall.orbit.domain.schedule_view import firing_view, schedule_view
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.usecases.audit import record
from agentcall.orbit.usecases.schedule_access import NOT_FOUND, ScheduleRead, ScheduleStore
from agentcall.orbit.usecases.schedule_backfill import backfill_schedule
from agentcall.orbit.usecases.schedule_create import create_schedule
from agentcall.orbit.usecases.schedule_delete import delete_schedule
from agentcall.orbit.usecases.schedule_firing import Submit
from agentcall.orbit.usecases.schedule_get import get_schedule
from agentcall.orbit.usecases.schedule_list import list_schedules
from agentcall.orbit.usecases.schedule_next_times import schedule_next_times
from agentcall.orbit.usecases.schedule_recent_firings import recent_firings
from agentcall.orbit.usecases.schedule_state import set_schedule_state
from agentcall.orbit.usecases.schedule_trigger import trigger_schedule
from agentcall.orbit.usecases.schedule_update import update_schedule

READ, WRITE = Permission.SCHEDULES_READ, Permission.SCHEDULES_WRITE
LIST_PARAMS = frozenset({"queue_id", "state", "limit", "cursor"})
DEFAULT_LIMIT, MAX_COUNT = 20, 100
DEFAULT_NEXT = 10


def schedule_id_from_path(request: Request) -> str:
    """A malformed ID in a path names no schedule: 404, like a missing one."""
    text = request.path_params["schedule_id"]
    if not is_id(text):
        raise NotFound(NOT_FOUND)
    return str(text)


def count_param(text: str | None, name: str, default: int) -> int:
    """1-100 written as plain decimal digits."""
    if text is None:
        return default
    digits = text.isascii() and text.isdigit() and len(text) <= 3
    if not digits or text.startswith("0") or int(text) > MAX_COUNT:
        raise InvalidArgument(f"must be an integer 1-{MAX_COUNT}", name)
    return int(text)


def _read(read: ScheduleRead) -> dict[str, JsonValue]:
    return schedule_view(read.row, read.last)


def _state(text: str | None) -> ScheduleState | None:
    if text is None:
        return None
    if text not in {state.value for state in ScheduleState}:
        raise InvalidArgument("must be active or paused", "state")
    return ScheduleState(text)


async def _audit(
    ctx: Context,
    principal: Principal,
    verb: str,
    schedule_id: str,
    detail: dict[str, JsonValue] | None = None,
) -> None:
    """The audit entry of a schedule change (`schedules.<verb>`, docs/orbit/audit.md)."""
    await record(ctx.ops.store, principal, f"schedules.{verb}", "schedule", schedule_id, detail)


class ScheduleRoutes:
    """`submit`: the ordinary submit use case, which trigger and backfill fire through."""

    def __init__(
        self,
        store: ScheduleStore,
        submit: Submit,
        changed: Callable[[str], None] = lambda schedule_id: None,
        counted: Callable[[str, int], None] = lambda outcome, n: None,
    ) -> None:
        self.store = store
        self.submit = submit
        self.changed = changed
        self.counted = counted  # orbit_schedule_firings_total{outcome}

    async def create(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, WRITE)
        query(request, NO_PARAMS)
        body = await read_json_body(request)
        key = single_header(request, "idempotency-key")
        created = await create_schedule(self.store, principal, body, key)
        data: dict[str, JsonValue] = {
            "deduplicated": created.deduplicated,
            "schedule": RawJson(created.schedule_text),
        }
        if not created.deduplicated:
            self.changed(created.schedule_id)
            await _audit(ctx, principal, "create", created.schedule_id)
        return envelope(ctx.request_id, created.status, data=data)

    async def list(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, READ)
        params = query(request, LIST_PARAMS)
        queue_id = params.get("queue_id")
        if queue_id is not None:
            check_id(queue_id, "queue_id")
        state = _state(params.get("state"))
        limit = count_param(params.get("limit"), "limit", DEFAULT_LIMIT)
        cursor = params.get("cursor")
        state_name = None if state is None else state.value
        after = None if cursor is None else decode_schedule_cursor(cursor, queue_id, state_name)
        page = await list_schedules(self.store, principal, queue_id, state, after, limit)
        data: dict[str, JsonValue] = {"items": [_read(item) for item in page.items]}
        if page.after_id is not None:
            data["next_cursor"] = encode_schedule_cursor(queue_id, state_name, page.after_id)
        return envelope(ctx.request_id, 200, data=data)

    async def get(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, READ)
        schedule_id = schedule_id_from_path(request)
        query(request, NO_PARAMS)
        read = await get_schedule(self.store, principal, schedule_id)
        return envelope(ctx.request_id, 200, data=_read(read))

    async def patch(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, WRITE)
        schedule_id = schedule_id_from_path(request)
        query(request, NO_PARAMS)
        body = await read_json_body(request)
        read = await update_schedule(self.store, principal, schedule_id, body)
        self.changed(schedule_id)
        await _audit(
            ctx,
            principal,
            "update",
            schedule_id,
            {"fields": sorted(body) if isinstance(body, dict) else []},
        )
        return envelope(ctx.request_id, 200, data=_read(read))

    async def delete(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, WRITE)
        schedule_id = schedule_id_from_path(request)
        params = query(request, frozenset({"expected_revision"}))
        text = params.get("expected_revision")
        expected = None
        if text is not None:
            expected = parse_decimal_uint64(text, "expected_revision", nonzero=True)
        await delete_schedule(self.store, principal, schedule_id, expected)
        self.changed(schedule_id)
        await _audit(ctx, principal, "delete", schedule_id)
        return envelope(ctx.request_id, 200, data={"id": schedule_id, "deleted": True})

    async def pause(self, request: Request, ctx: Context) -> Response:
        return await self._set_state(request, ctx, ScheduleState.PAUSED)

    async def resume(self, request: Request, ctx: Context) -> Response:
        return await self._set_state(request, ctx, ScheduleState.ACTIVE)

    async def _set_state(self, request: Request, ctx: Context, state: ScheduleState) -> Response:
        principal = await ctx.principal(request, WRITE)
        schedule_id = schedule_id_from_path(request)
        query(request, NO_PARAMS)
        revision, note, given = parse_state_change(await read_json_body(request))
        read = await set_schedule_state(
            self.store, principal, schedule_id, state, revision, note, keep_note=not given
        )
        self.changed(schedule_id)
        verb = "pause" if state is ScheduleState.PAUSED else "resume"
        await _audit(ctx, principal, verb, schedule_id, {"note": note})
        return envelope(ctx.request_id, 200, data=_read(read))

    async def next_times(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, READ)
        schedule_id = schedule_id_from_path(request)
        params = query(request, frozenset({"count"}))
        count = count_param(params.get("count"), "count", DEFAULT_NEXT)
        times = await schedule_next_times(self.store, principal, schedule_id, count)
        return envelope(ctx.request_id, 200, data={"times": [format_time(t) for t in times]})

    async def firings(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, READ)
        schedule_id = schedule_id_from_path(request)
        params = query(request, frozenset({"limit"}))
        limit = count_param(params.get("limit"), "limit", DEFAULT_LIMIT)
        rows = await recent_firings(self.store, principal, schedule_id, limit)
        return envelope(ctx.request_id, 200, data={"items": [firing_view(r) for r in rows]})

    async def trigger(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, WRITE)
        schedule_id = schedule_id_from_path(request)
        query(request, NO_PARAMS)
        body = await read_json_body(request)
        if body != {}:
            raise InvalidArgument("send an empty JSON object {}", "body")
        key = single_header(request, "idempotency-key")
        fired = await trigger_schedule(
            self.store, self.submit, principal, schedule_id, key, ctx.request_id
        )
        if not fired.deduplicated:
            self.counted("triggered", 1)
            detail: dict[str, JsonValue] = {"task_id": fired.firing.task_id}
            await _audit(ctx, principal, "trigger", schedule_id, detail)
        data: dict[str, JsonValue] = {
            "deduplicated": fired.deduplicated,
            "firing": firing_view(fired.firing),
        }
        return envelope(ctx.request_id, 200 if fired.deduplicated else 201, data=data)

    async def backfill(self, request: Request, ctx: Context) -> Response:
        principal = await ctx.principal(request, WRITE)
        schedule_id = schedule_id_from_path(request)
        query(request, NO_PARAMS)
        body = await read_json_body(request)
        done = await backfill_schedule(
            self.store, self.submit, principal, schedule_id, body, ctx.request_id
        )
        if done.firings:  # a preview fires nothing and changes nothing
            self.counted("backfilled", sum(not f.deduplicated for f in done.firings))
            await _audit(ctx, principal, "backfill", schedule_id, {"slots": len(done.slots)})
        data: dict[str, JsonValue] = {
            "slots": [format_time(slot) for slot in done.slots],
            "firings": [firing_view(firing) for firing in done.firings],
        }
        return envelope(ctx.request_id, 200, data=data)
