"""What the console's schedule pages show, and the operations they need (`ScheduleDesk`): the
schedule use cases (`agentcall.orbit.usecases`) behind one small interface, so the pages and
their tests do not depend on how the use cases are split. Every operation takes the signed-in
principal and applies the same permission and queue-scope checks as the API."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agentcall.orbit.domain.errors import PermissionDenied
from agentcall.orbit.domain.tokens import Principal

READ = "schedules:read"
WRITE = "schedules:write"
PAGE = 50  # schedules a page
FIRINGS = 20  # recent firings on a schedule's page
NEXT_TIMES = 5  # next nominal times on a schedule's page


def allowed(principal: Principal, permission: str) -> bool:
    return permission in {str(p) for p in principal.permissions}


def require(principal: Principal, permission: str) -> None:
    if not allowed(principal, permission):
        raise PermissionDenied(f"the token lacks the permission {permission}")


@dataclass(frozen=True, slots=True)
class FiringView:
    """One firing record: a slot fired (its task), skipped for overlap, missed beyond the
    catch-up window (`slots` of them), backfilled or triggered."""

    nominal_at: datetime
    fired_at: datetime
    kind: str  # scheduled, trigger, backfill
    outcome: str  # fired, skipped_overlap, missed, backfilled, triggered
    task_id: str | None
    slots: int = 1


@dataclass(frozen=True, slots=True)
class ScheduleView:
    id: str
    revision: int
    state: str  # active or paused
    note: str | None
    queue_id: str
    handler: str
    handler_version: str
    cron: str | None
    time_zone: str | None
    interval_ms: int | None
    overlap: str
    catchup_window_ms: int
    jitter_ms: int
    next_fire_at: datetime | None  # None when paused or ended
    last_firing: FiringView | None
    start_at: datetime | None = None
    end_at: datetime | None = None

    @property
    def spec(self) -> str:
        """`30 2 * * *` or `every 60 s`, for people (the zone is shown apart)."""
        if self.cron is not None:
            return self.cron
        return f"every {describe_ms(self.interval_ms or 0)}"

    @property
    def zone(self) -> str:
        return (self.time_zone or "UTC") if self.cron is not None else ""


@dataclass(frozen=True, slots=True)
class ScheduleList:
    items: list[ScheduleView]
    next_cursor: str | None


def describe_ms(ms: int) -> str:
    """An interval in the largest whole unit: 90 s, 5 min, 2 h, 1 d; else milliseconds."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


class ScheduleDesk(Protocol):
    """The schedule operations of the console; `request_id` names the action in the audit
    trail and the logs, `key` is the idempotency key the rendered form carried."""

    async def page(
        self, principal: Principal, state: str | None, cursor: str | None, limit: int
    ) -> ScheduleList: ...

    async def get(self, principal: Principal, schedule_id: str) -> ScheduleView: ...

    async def firings(
        self, principal: Principal, schedule_id: str, limit: int
    ) -> list[FiringView]: ...

    async def next_times(
        self, principal: Principal, schedule_id: str, count: int
    ) -> list[datetime]: ...

    async def pause(
        self,
        principal: Principal,
        schedule_id: str,
        revision: int,
        note: str | None,
        request_id: str,
    ) -> None: ...

    async def resume(
        self, principal: Principal, schedule_id: str, revision: int, request_id: str
    ) -> None: ...

    async def trigger(
        self, principal: Principal, schedule_id: str, key: str, request_id: str
    ) -> FiringView: ...

    async def delete(
        self, principal: Principal, schedule_id: str, revision: int, request_id: str
    ) -> None: ...
