"""Decisions of one group commit of submits (pure; O-SUB-1, O-SUB-2, O-SUB-4).

Each submit of a group is decided on its own, in arrival order, against the records already
stored and the keys accepted earlier in the same group: a known key replays its receipt (or
conflicts), a new key is checked against the group's acceptance time and becomes a new task,
and a refusal concerns that submit only. The same key twice in one group therefore yields one
task, exactly as two concurrent requests do on the single path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.audit import Source
from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import OrbitError
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.submit import SubmitRequest, plan_times
from agentcall.orbit.domain.task import Task, new_task, task_view
from agentcall.orbit.domain.tokens import Principal


@dataclass(frozen=True, slots=True)
class PendingSubmit:
    """A submit that passed every request check, waiting for its group."""

    principal: Principal
    request: SubmitRequest
    scope: Scope
    digest: Digest
    request_id: str
    source: Source | None = None  # where the request came from (the audit line's)


@dataclass(frozen=True, slots=True)
class Accept:
    task: Task
    receipt: StoredReceipt


@dataclass(frozen=True, slots=True)
class Replay:
    stored: StoredReceipt  # its digest matched


@dataclass(frozen=True, slots=True)
class Refuse:
    error: OrbitError


Decision = Accept | Replay | Refuse


def plan_group(
    items: Sequence[PendingSubmit],
    stored: Mapping[Scope, StoredReceipt],
    now: datetime,
    new_id: Callable[[], str],
) -> list[Decision]:
    """One decision per item, in order; `now` is the group's acceptance time."""
    accepted: dict[Scope, StoredReceipt] = {}
    decisions: list[Decision] = []
    for item in items:
        decision = _decide(item, stored.get(item.scope) or accepted.get(item.scope), now, new_id)
        if isinstance(decision, Accept):
            accepted[item.scope] = decision.receipt
        decisions.append(decision)
    return decisions


def _decide(
    item: PendingSubmit, earlier: StoredReceipt | None, now: datetime, new_id: Callable[[], str]
) -> Decision:
    try:
        if earlier is not None:  # a replay is not checked against the clock again
            return Replay(check_replay(earlier, item.digest))
        times = plan_times(item.request, now)
    except OrbitError as exc:
        return Refuse(exc)
    task = new_task(new_id(), item.principal.namespace_id, item.request, times, now)
    return Accept(task, StoredReceipt(item.digest, 201, dumps(task_view(task))))
