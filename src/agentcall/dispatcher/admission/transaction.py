"""The admission transaction: decide a batch of commands and persist every effect at once.

Runs on the database thread inside one transaction (D-CMD-2: the occupancy reservation,
the inbox record, the execution with its pinned snapshot and the command.result in the
outbox commit together). Only after the commit are deliveries settled (D-MQ-4).

Per command, before admission (the task's local state wins over the queue):

* already in the inbox (redelivery) → ACK, nothing else (D-CMD-1);
* task has a ``stopped`` barrier → ACK silently, no result (D-CTL-4: the stop drain discards them);
* task paused (barrier or discovered status), or removed → requeue, keep the backlog;
* a SaaS read it depends on is failing, or its config came from a lagging replica →
  only the rules without SaaS data (:func:`~agentcall.dispatcher.domain.admission.
  decide_local`); if they hold, requeue: no final rejection for an outage (D-NOTE-1/2);
* otherwise :func:`agentcall.dispatcher.domain.admission.decide`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agentcall.dispatcher.domain import callids
from agentcall.dispatcher.domain.admission import (
    Accept,
    Reject,
    TaskView,
    decide,
    decide_local,
    stale,
)
from agentcall.dispatcher.domain.model import ExecuteCommand, LocalTask, SipSnapshot, TenantQuota
from agentcall.dispatcher.domain.occupancy import OccupancyIndex
from agentcall.dispatcher.domain.outage import STALE
from agentcall.dispatcher.domain.reasons import RejectReason
from agentcall.dispatcher.domain.results import execute_result
from agentcall.dispatcher.domain.states import Barrier, InboxDecision, TaskStatus
from agentcall.dispatcher.domain.validity import DEFAULT_CLOCK_SKEW_S
from agentcall.dispatcher.mq.settle import Settle
from agentcall.dispatcher.saas.cache import TaskLookup
from agentcall.dispatcher.store import executions, inbox, outbox, rejected, tasks


@dataclass(frozen=True)
class Invalid:
    """A delivery that is not valid JSON or fails its schema (D-MQ-5)."""

    source: str
    reason: str
    detail: str
    raw: bytes


@dataclass(frozen=True)
class Valid:
    command: ExecuteCommand
    queue_task_id: str


Item = Invalid | Valid


@dataclass(frozen=True)
class Inputs:
    dispatcher_id: str
    routing_key: str
    sip: SipSnapshot | None
    configs: Mapping[str, TaskLookup]
    quotas: Mapping[tuple[str, str], TenantQuota | None]
    now: datetime
    held: Mapping[str, str] = field(default_factory=dict)  # task_id → the failing read
    skew_s: float = DEFAULT_CLOCK_SKEW_S
    amd: str | None = None  # pinned in every accepted plan (DISPATCHER_AMD)


@dataclass
class Outcome:
    settles: list[Settle] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    decisions: list[tuple[str, str]] = field(default_factory=list)
    decide_s: list[float] = field(default_factory=list)
    held: set[str] = field(default_factory=set)  # tasks whose commands went back (outage)
    stale: set[str] = field(default_factory=set)  # tasks whose config was below the seen
    seen: dict[str, int] = field(default_factory=dict)  # task revisions newer than stored


def _hold(local: LocalTask | None) -> Settle | None:
    """Disposition decided by the task's local state before admission, if any."""
    if local is None:
        return None
    if local.barrier is Barrier.STOPPED:
        return Settle.ACK
    if local.barrier is not Barrier.NONE or local.status in (TaskStatus.PAUSED, TaskStatus.STOPPED):
        return Settle.REQUEUE
    return None


def run_batch(conn: sqlite3.Connection, items: Sequence[Item], inp: Inputs) -> Outcome:
    """Decide ``items`` in delivery order; call inside one transaction."""
    out = Outcome()
    ids = [i.command.command_id for i in items if isinstance(i, Valid)]
    seen = inbox.known_commands(conn, ids)
    occupancy = executions.occupancy(conn)
    local_tasks = tasks.load_tasks(conn)
    for item in items:
        if isinstance(item, Invalid):
            rejected.record(
                conn,
                source=item.source,
                reason=item.reason,
                detail=item.detail,
                raw=item.raw,
                now=inp.now,
            )
            out.settles.append(Settle.DEAD_LETTER)
            continue
        command_id = item.command.command_id
        if command_id in seen:
            out.settles.append(Settle.ACK)
            out.decisions.append(("duplicate", "duplicate"))
            continue
        out.settles.append(_one(conn, item, local_tasks, occupancy, inp, out))
        if out.settles[-1] is not Settle.REQUEUE:
            seen.add(command_id)
    if out.seen:
        tasks.note_seen(conn, out.seen)
    return out


def _one(
    conn: sqlite3.Connection,
    item: Valid,
    local_tasks: Mapping[str, LocalTask],
    occupancy: OccupancyIndex,
    inp: Inputs,
    out: Outcome,
) -> Settle:
    command = item.command
    local = local_tasks.get(item.queue_task_id)
    held = _hold(local)
    if held is Settle.ACK:
        _record(conn, command, InboxDecision.DISCARDED_STOPPED, None, None, None, inp.now)
        out.decisions.append(("discarded_stopped", "stopped"))
        return Settle.ACK
    if held is Settle.REQUEUE:
        out.decisions.append(("requeued", "barrier"))
        return Settle.REQUEUE
    holder = _holder(item, local, inp, out)
    if holder is not None:
        return _held(conn, item, local, inp, out, holder)
    started = time.perf_counter()
    result = _decide(item, local, occupancy, inp)
    out.decide_s.append(time.perf_counter() - started)
    if isinstance(result, Accept):
        out.accepted.append(_accept(conn, command, result, inp))
        plan = result.plan
        occupancy.add(plan.tenant_id, plan.task_id, plan.trunk_id)
        out.decisions.append(("accepted", "accepted"))
    else:
        _reject(conn, command, result.reason, inp)
        out.decisions.append(("rejected", result.reason.value))
    return Settle.ACK


def _holder(item: Valid, local: LocalTask | None, inp: Inputs, out: Outcome) -> str | None:
    """The failing read that holds this command's task, if any (D-NOTE-1, D-NOTE-2)."""
    task_id = item.command.task_id
    if task_id in inp.held:
        return inp.held[task_id]
    config = inp.configs[task_id].config if task_id in inp.configs else None
    if config is None or local is None:
        return None
    if stale(config, local):
        out.stale.add(task_id)
        return STALE
    if config.task_revision > local.seen_revision:
        out.seen[task_id] = max(out.seen.get(task_id, 0), config.task_revision)
    return None


def _held(
    conn: sqlite3.Connection,
    item: Valid,
    local: LocalTask | None,
    inp: Inputs,
    out: Outcome,
    holder: str,
) -> Settle:
    """Reject only on what needs no SaaS read (an expired command: its one result);
    otherwise back to the queue until the read succeeds."""
    command = item.command
    view = TaskView(inp.dispatcher_id, local, None)
    rejected_now = decide_local(command, view, inp.now, inp.skew_s)
    if rejected_now is not None:
        _reject(conn, command, rejected_now.reason, inp)
        out.decisions.append(("rejected", rejected_now.reason.value))
        return Settle.ACK
    out.held.add(command.task_id)
    out.decisions.append(("held", holder.partition(":")[0]))
    return Settle.REQUEUE


def _decide(
    item: Valid, local: LocalTask | None, occupancy: OccupancyIndex, inp: Inputs
) -> Accept | Reject:
    command = item.command
    if command.task_id != item.queue_task_id:
        return Reject(RejectReason.IDENTITY_MISMATCH, "payload.task_id differs from the queue")
    lookup = inp.configs.get(command.task_id, TaskLookup(None, error="not_read"))
    config = lookup.config
    quota = inp.quotas.get((config.tenant_id, config.tenant_key)) if config else None
    view = TaskView(inp.dispatcher_id, local, config, config_missing=lookup.missing)
    tenant = config.tenant_id if config else command.tenant_id
    busy = occupancy.view(tenant, command.task_id)
    return decide(command, view, inp.sip, quota, busy, inp.now, inp.skew_s, amd=inp.amd)


def _accept(conn: sqlite3.Connection, command: ExecuteCommand, result: Accept, inp: Inputs) -> str:
    # derived, not drawn: a command re-admitted after a lost state asks for the same call
    execution_id = callids.execution_id(inp.dispatcher_id, command.task_id, command.command_id)
    event_id = callids.command_result_event_id(inp.dispatcher_id, command.command_id)
    _record(conn, command, InboxDecision.ACCEPTED, None, execution_id, event_id, inp.now)
    executions.insert(
        conn,
        execution_id=execution_id,
        call_id=execution_id,
        call_result_event_id=callids.call_result_event_id(execution_id),
        plan=result.plan,
        now=inp.now,
    )
    body = execute_result(
        event_id=event_id,
        command=command,
        occurred_at=inp.now,
        execution_id=execution_id,
        reason_code=None,
    )
    outbox.enqueue(
        conn,
        event_id=event_id,
        event_type="command.result",
        routing_key=inp.routing_key,
        body=body,
        now=inp.now,
    )
    return execution_id


def _reject(
    conn: sqlite3.Connection, command: ExecuteCommand, reason: RejectReason, inp: Inputs
) -> None:
    event_id = callids.command_result_event_id(inp.dispatcher_id, command.command_id)
    _record(conn, command, InboxDecision.REJECTED, reason.value, None, event_id, inp.now)
    body = execute_result(
        event_id=event_id,
        command=command,
        occurred_at=inp.now,
        execution_id=None,
        reason_code=reason.value,
    )
    outbox.enqueue(
        conn,
        event_id=event_id,
        event_type="command.result",
        routing_key=inp.routing_key,
        body=body,
        now=inp.now,
    )


def _record(
    conn: sqlite3.Connection,
    command: ExecuteCommand,
    decision: InboxDecision,
    reason: str | None,
    execution_id: str | None,
    event_id: str | None,
    now: datetime,
) -> None:
    inbox.record(
        conn,
        command_id=command.command_id,
        task_id=command.task_id,
        decision=decision,
        reason_code=reason,
        execution_id=execution_id,
        result_event_id=event_id,
        now=now,
    )
