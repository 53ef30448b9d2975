"""The console's `ScheduleDesk` (`agentcall.orbit.console.schedule_views`) over the schedule
use cases: the same permission and queue-scope checks as the API, the rows turned into the
pages' views. The list's cursor is the API's (`agentcall.orbit.domain.schedule_cursor`)."""

from __future__ import annotations

import json
from datetime import datetime

from agentcall.orbit.console.schedule_views import FiringView, ScheduleList, ScheduleView
from agentcall.orbit.domain.schedule_cursor import decode_schedule_cursor, encode_schedule_cursor
from agentcall.orbit.domain.schedule_plan import ScheduleState
from agentcall.orbit.domain.schedule_records import FiringRow
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.usecases.schedule_access import ScheduleRead, ScheduleStore
from agentcall.orbit.usecases.schedule_delete import delete_schedule
from agentcall.orbit.usecases.schedule_firing import Submit
from agentcall.orbit.usecases.schedule_get import get_schedule
from agentcall.orbit.usecases.schedule_list import list_schedules
from agentcall.orbit.usecases.schedule_next_times import schedule_next_times
from agentcall.orbit.usecases.schedule_recent_firings import recent_firings
from agentcall.orbit.usecases.schedule_state import set_schedule_state
from agentcall.orbit.usecases.schedule_trigger import trigger_schedule


def firing_of(row: FiringRow) -> FiringView:
    return FiringView(row.nominal_at, row.fired_at, row.kind, row.outcome, row.task_id, row.slots)


def view_of(read: ScheduleRead) -> ScheduleView:
    row = read.row
    template, spec = json.loads(row.template_text), json.loads(row.spec_text)
    return ScheduleView(
        id=row.id,
        revision=row.revision,
        state=row.state,
        note=row.note,
        queue_id=row.queue_id,
        handler=template["handler"],
        handler_version=template["handler_version"],
        cron=spec.get("cron"),
        time_zone=spec.get("time_zone"),
        interval_ms=spec.get("interval_ms"),
        overlap=row.overlap,
        catchup_window_ms=row.catchup_window_ms,
        jitter_ms=row.jitter_ms,
        next_fire_at=row.next_fire_at,
        last_firing=None if read.last is None else firing_of(read.last),
        start_at=row.start_at,
        end_at=row.end_at,
    )


class ScheduleDeskService:
    def __init__(self, store: ScheduleStore, submit: Submit) -> None:
        self.store = store
        self.submit = submit

    async def page(
        self, principal: Principal, state: str | None, cursor: str | None, limit: int
    ) -> ScheduleList:
        after = None if cursor is None else decode_schedule_cursor(cursor, None, state)
        wanted = None if state is None else ScheduleState(state)
        found = await list_schedules(self.store, principal, None, wanted, after, limit)
        following = None
        if found.after_id is not None:
            following = encode_schedule_cursor(None, state, found.after_id)
        return ScheduleList([view_of(item) for item in found.items], following)

    async def get(self, principal: Principal, schedule_id: str) -> ScheduleView:
        return view_of(await get_schedule(self.store, principal, schedule_id))

    async def firings(self, principal: Principal, schedule_id: str, limit: int) -> list[FiringView]:
        rows = await recent_firings(self.store, principal, schedule_id, limit)
        return [firing_of(row) for row in rows]

    async def next_times(
        self, principal: Principal, schedule_id: str, count: int
    ) -> list[datetime]:
        return await schedule_next_times(self.store, principal, schedule_id, count)

    async def pause(
        self,
        principal: Principal,
        schedule_id: str,
        revision: int,
        note: str | None,
        request_id: str,
    ) -> None:
        paused = ScheduleState.PAUSED
        await set_schedule_state(
            self.store, principal, schedule_id, paused, revision, note, keep_note=note is None
        )

    async def resume(
        self, principal: Principal, schedule_id: str, revision: int, request_id: str
    ) -> None:
        active = ScheduleState.ACTIVE
        await set_schedule_state(
            self.store, principal, schedule_id, active, revision, None, keep_note=True
        )

    async def trigger(
        self, principal: Principal, schedule_id: str, key: str, request_id: str
    ) -> FiringView:
        fired = await trigger_schedule(
            self.store, self.submit, principal, schedule_id, key, request_id
        )
        return firing_of(fired.firing)

    async def delete(
        self, principal: Principal, schedule_id: str, revision: int, request_id: str
    ) -> None:
        await delete_schedule(self.store, principal, schedule_id, revision)
