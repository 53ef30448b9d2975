"""`client.schedules`: the schedule operations of `Client` (blocking) and `AsyncClient`
(asyncio), each defined once by its `Call` builder in
`agentcall.orbit.sdk.client.schedules_calls` (docs/orbit/schedules.md).

    client.schedules.create(key, CreateScheduleRequest(...))   -> ScheduleReceipt
    client.schedules.get(id) / list(...) / iter(...)            -> Schedule, SchedulePage, ...
    client.schedules.update(id, UpdateScheduleRequest(...))     -> Schedule
    client.schedules.pause(id, revision, note) / resume(...)    -> Schedule
    client.schedules.trigger(id, key)                           -> TriggerReceipt
    client.schedules.backfill(id, start, end) / preview_backfill(...) -> Backfill
    client.schedules.next_times(id, count) / firings(id, limit)
    client.schedules.delete(id, expected_revision)

On `AsyncClient` the same names return awaitables (`iter`: an async iterator)."""

from __future__ import annotations

from agentcall.orbit.sdk.client import schedules_calls as calls
from agentcall.orbit.sdk.client.binding import (
    Asynchronous,
    Blocking,
    Listing,
    Operation,
)

__all__ = ["AsyncSchedules", "Schedules"]


class _Operations:
    """Every schedule operation, once; the subclass decides how a call is sent."""

    create = Operation(calls.create)
    get = Operation(calls.get)
    list = Operation(calls.list_page)
    iter = Listing(calls.every)
    update = Operation(calls.update)
    delete = Operation(calls.delete)
    pause = Operation(calls.pause)
    resume = Operation(calls.resume)
    trigger = Operation(calls.trigger)
    backfill = Operation(calls.backfill)
    preview_backfill = Operation(calls.preview_backfill)
    next_times = Operation(calls.next_times)
    firings = Operation(calls.firings)


class Schedules(_Operations, Blocking):
    """`Client.schedules`: every method sends at once and returns the result."""


class AsyncSchedules(_Operations, Asynchronous):
    """`AsyncClient.schedules`: every method returns an awaitable (`iter`: an async
    iterator)."""
