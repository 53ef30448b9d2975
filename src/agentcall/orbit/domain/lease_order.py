"""The order in which a queue's ready WAITING tasks are leased (docs/orbit/flow-control.md,
"Priority and ageing"). Pure.

A task's lease order is the moment it became ready, moved later by one AGEING_STEP for each
step of priority below the highest: `available_at + (MAX_PRIORITY - priority) × AGEING_STEP`,
kept as microseconds since the epoch so that the database orders it with one integer column
(`tasks.lease_order`, written wherever `available_at` is). The lowest order leases first; ties
go to the lower task id.

So a higher priority is leased first among tasks that became ready around the same time, and
FIFO by readiness holds within one priority; but waiting counts too: a task of priority `p`
that became ready at `t` is never overtaken by a task that became ready after
`t + (MAX_PRIORITY - p) × AGEING_STEP`, whatever its priority. No priority starves: once that
horizon has passed, only the finite set of tasks already ahead of it stands between a task and
its lease."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentcall.orbit.domain.flow_settings import MAX_PRIORITY

AGEING_STEP = timedelta(minutes=10)  # the head start that one step of priority is worth
STEP_US = AGEING_STEP // timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_us(at: datetime) -> int:
    """Microseconds since the epoch of an aware time."""
    return (at - _EPOCH) // timedelta(microseconds=1)


def lease_order(available_at: datetime, priority: int) -> int:
    """The lease order of a task ready at `available_at` with `priority`."""
    return rank_order(available_at, MAX_PRIORITY - priority)


def rank_order(available_at: datetime, lease_rank: int) -> int:
    """`lease_order` from the stored rank (`tasks.lease_rank` = MAX_PRIORITY - priority)."""
    return epoch_us(available_at) + lease_rank * STEP_US


def competing_rank(order: int, now: datetime) -> int:
    """The rank (MAX_PRIORITY - priority) a ready task competes at `now`: its own rank when it
    has just become ready, one lower for every AGEING_STEP it has waited since (below zero once
    it has waited longer than its rank's head start). Fairness deals its turns within one
    competing rank."""
    return -((epoch_us(now) - order) // STEP_US)


def starvation_horizon(available_at: datetime, priority: int) -> datetime:
    """The latest readiness of a task that may still be leased before this one."""
    return available_at + (MAX_PRIORITY - priority) * AGEING_STEP
