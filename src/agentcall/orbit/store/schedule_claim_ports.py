"""Claims of due schedules (docs/orbit/schedules.md, "Guarantees"): how the server processes
share the firing of schedules without a row lock held across the submit. A claim is a
conditional UPDATE of `claimed_by` (a token of the claim) and `claim_until` (the lease) on
the active schedules that are due and not claimed; the claimer fires their slots, then
`finish` writes the firing records and releases each schedule in one transaction: its cursor
(`next_fire_at`), the previous firing's task, the buffered slot, and `claim_until` as the
time before which nobody needs to look at it again (a jittered slot, a buffered slot's
previous task), or NULL.

A release applies only while the claim is still its own (`claimed_by`) and the schedule is
at the revision claimed: a schedule changed meanwhile (patched, paused) keeps what the
change wrote, and a claim lost to an expired lease writes nothing but its firing records
(the slot keys make a slot fired by both claimers one task). The SQL store
(`agentcall.orbit.store.schedule_claims`) and the twin
(`agentcall.orbit.store.memory_schedule_claims`) implement it alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow


@dataclass(frozen=True, slots=True)
class Claimed:
    """The store's clock at the claim and the schedules claimed (`claimed_by` set)."""

    now: datetime
    rows: tuple[ScheduleRow, ...]


@dataclass(frozen=True, slots=True)
class Release:
    schedule_id: str
    claimed_by: str
    revision: int  # as claimed
    next_fire_at: datetime | None
    last_task_id: str | None
    buffered_at: datetime | None
    hold_until: datetime | None  # claim_until after the release


class ScheduleClaims(Protocol):
    async def claim_due(self, limit: int, lease: timedelta) -> Claimed:
        """Claim up to `limit` active schedules that are due (`next_fire_at` at or before
        now, or a slot buffered) and free (`claim_until` NULL or passed), earliest first,
        until now + `lease`."""
        ...

    async def earliest_due(self) -> tuple[datetime, datetime | None]:
        """(now, the earliest time an active schedule becomes due and free; None: none)."""
        ...

    async def finish(self, firings: Sequence[FiringRow], releases: Sequence[Release]) -> int:
        """Write the firing records (one per slot, as `insert_firing`; those of schedules
        deleted meanwhile are dropped) and apply the releases, in one transaction; how many
        releases found their claim and revision."""
        ...
