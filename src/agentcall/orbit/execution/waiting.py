"""WAITING tasks that can no longer start: FAILED with START_DEADLINE_EXCEEDED or
DEADLINE_EXCEEDED (worker-protocol.md §4, sweeper step 3)."""

from __future__ import annotations

from datetime import datetime

from agentcall.orbit.domain.leasing import waiting_expiry
from agentcall.orbit.store.ports import AttemptTransaction


async def expire_waiting(tx: AttemptTransaction, now: datetime, limit: int) -> int:
    failed = 0
    for task in await tx.expired_waiting(now, limit):
        code = waiting_expiry(now, task.start_deadline_at, task.deadline_at)
        if code is not None and await tx.fail_waiting(now, task, code):
            failed += 1
    return failed
