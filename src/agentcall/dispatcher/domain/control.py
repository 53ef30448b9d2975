"""Task control as pure data: barrier moves and the control decision table (D-CTL-1..5).

Barriers (persisted in ``tasks.barrier``) only ever tighten admission until a verified
``resume`` lifts them (D-DISC-7, D-CTL-5)::

    none ──close──► closed ──pause verified──► paused ──resume verified──► none
      │               │  ▲                        │
      │               │  └── (any rejected control closes; only a valid resume reopens)
      └───────────────┴────────stop verified──────┴──► stopped   (irreversible)
    any ──discovery removed──► removed  (tombstone, terminal)

``decide(barrier, action, read, validity=…)`` is the whole table: for the barrier the task
has when the control is processed, the action and the fresh authoritative read (a task
status, or why the read failed) it returns the new barrier, the receipt
(status / reason_code / task_state) and what must happen to the task's consumer. It never
raises: every cell of the table is defined. :func:`move_barrier` is the guard the store
runs before persisting; an illegal move raises :class:`IllegalTransition`.

Expired controls (``not_after`` passed, the same boundary as for call.execute:
:mod:`~agentcall.dispatcher.domain.validity`) and controls issued too far in the future
get a rejected receipt (``command_expired`` / ``invalid_validity_window``) and fail closed
(D-NOTE-3, D-CTL-5): admission for the task closes until a valid resume; no barrier is
lifted and the irreversible ``stopped`` barrier is never set by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from agentcall.dispatcher.domain.model import TaskConfig
from agentcall.dispatcher.domain.reasons import ControlRejectReason
from agentcall.dispatcher.domain.states import Barrier, IllegalTransition, TaskStatus
from agentcall.dispatcher.domain.validity import DEFAULT_CLOCK_SKEW_S, Validity, validity


class ControlAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"

    @property
    def closes_first(self) -> bool:
        """pause and stop persist closed admission before anything else (D-CTL-2, D-CTL-4)."""
        return self is not ControlAction.RESUME


class ActiveCallPolicy(StrEnum):
    """What happens to calls already accepted when pause/stop is applied."""

    DRAIN = "drain"
    HANGUP = "hangup"


class ReadFailure(StrEnum):
    """Why the fresh task GET gave no usable authoritative status.

    All of them reject with ``task_unavailable`` except ``stale``: a read answering a
    revision lower than one the D already saw contradicts what the D knows
    (``state_mismatch``, D-NOTE-1).
    """

    UNAVAILABLE = "unavailable"  # network, timeout, 5xx
    NOT_FOUND = "not_found"  # 404 resource_not_found: missing or not owned
    REFUSED = "refused"  # 401/403: this D is not authorized now
    INVALID = "invalid"  # 200 body breaking its schema or an identity/ownership check
    STALE = "stale"  # 200 from a lagging replica: revision below the highest seen


AuthoritativeRead = TaskStatus | ReadFailure


class ConsumerAction(StrEnum):
    """What the control lane must do with the task queue's consumer after the decision."""

    KEEP = "keep"  # nothing (terminal barrier: its own lane already handled it)
    SUSPEND = "suspend"  # cancel consumer, nack(requeue=true) prefetched-but-unaccepted
    DRAIN = "drain"  # suspend, then basic.get + silent ACK until the queue is empty
    REOPEN = "reopen"  # consume the same queue again
    DROP = "drop"  # removed tombstone: suspend and forget the task config; never hang up


class ReceiptStatus(StrEnum):
    APPLIED = "applied"
    REJECTED = "rejected"


class ReceiptState(StrEnum):
    """``payload.task_state`` of a control receipt: the D's local admission state."""

    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"
    CLOSED = "closed"


class JobPhase(StrEnum):
    """A persisted control processing: received (admission closed) → decided → done."""

    RECEIVED = "received"
    DECIDED = "decided"
    DONE = "done"


APPLIED = "applied"


@dataclass(frozen=True)
class ControlCommand:
    """A schema-valid ``task.control`` envelope (D-CTL-1: no command_id, no revision)."""

    dispatcher_id: str
    tenant_id: str
    tenant_key: str
    trace_id: str
    issued_at: datetime
    not_after: datetime
    task_id: str
    action: ControlAction
    active_call_policy: ActiveCallPolicy | None
    reason: str

    def validity(self, now: datetime, skew_s: float = DEFAULT_CLOCK_SKEW_S) -> Validity:
        """The one validity rule of every command (D-NOTE-3)."""
        return validity(self.issued_at, self.not_after, now, skew_s)


_BARRIER_MOVES: dict[Barrier, frozenset[Barrier]] = {
    Barrier.NONE: frozenset({Barrier.CLOSED, Barrier.PAUSED, Barrier.STOPPED, Barrier.REMOVED}),
    Barrier.CLOSED: frozenset({Barrier.NONE, Barrier.PAUSED, Barrier.STOPPED, Barrier.REMOVED}),
    Barrier.PAUSED: frozenset({Barrier.NONE, Barrier.STOPPED, Barrier.REMOVED}),
    Barrier.STOPPED: frozenset({Barrier.REMOVED}),
    Barrier.REMOVED: frozenset(),
}
_PHASE_MOVES: dict[JobPhase, frozenset[JobPhase]] = {
    JobPhase.RECEIVED: frozenset({JobPhase.DECIDED}),
    JobPhase.DECIDED: frozenset({JobPhase.DONE}),
    JobPhase.DONE: frozenset(),
}
_STATE_OF: dict[Barrier, ReceiptState] = {
    Barrier.NONE: ReceiptState.RUNNING,
    Barrier.CLOSED: ReceiptState.CLOSED,
    Barrier.PAUSED: ReceiptState.PAUSED,
    Barrier.STOPPED: ReceiptState.STOPPED,
    Barrier.REMOVED: ReceiptState.CLOSED,
}


def move_barrier(current: Barrier, target: Barrier) -> Barrier:
    """Return ``target`` if the rules allow it; staying in place is always legal."""
    if target is current or target in _BARRIER_MOVES[current]:
        return target
    raise IllegalTransition(f"task barrier cannot go from {current} to {target}")


def move_phase(current: JobPhase, target: JobPhase) -> JobPhase:
    if target is current or target in _PHASE_MOVES[current]:
        return target
    raise IllegalTransition(f"control job cannot go from {current} to {target}")


def close(barrier: Barrier) -> Barrier:
    """Closed admission: ``none`` becomes ``closed``; every other barrier is already tighter."""
    return Barrier.CLOSED if barrier is Barrier.NONE else barrier


def receipt_state(barrier: Barrier) -> ReceiptState:
    return _STATE_OF[barrier]


def admits(barrier: Barrier) -> bool:
    """Only a task without barrier may have a consumer and admit commands (D-CMD-2)."""
    return barrier is Barrier.NONE


@dataclass(frozen=True)
class ControlDecision:
    """One cell of the table: what a control processing leaves behind."""

    barrier: Barrier
    status: ReceiptStatus
    reason_code: str
    task_state: ReceiptState
    consumer: ConsumerAction

    @property
    def applied(self) -> bool:
        return self.status is ReceiptStatus.APPLIED


def _applied(barrier: Barrier, consumer: ConsumerAction) -> ControlDecision:
    return ControlDecision(
        barrier, ReceiptStatus.APPLIED, APPLIED, receipt_state(barrier), consumer
    )


def _rejected(
    barrier: Barrier, reason: ControlRejectReason, consumer: ConsumerAction
) -> ControlDecision:
    return ControlDecision(
        barrier, ReceiptStatus.REJECTED, reason.value, receipt_state(barrier), consumer
    )


def _read_reason(read: AuthoritativeRead) -> ControlRejectReason:
    """A status that contradicts the action (or a stale one) is a mismatch; a failed read
    is unavailability."""
    if isinstance(read, TaskStatus) or read is ReadFailure.STALE:
        return ControlRejectReason.STATE_MISMATCH
    return ControlRejectReason.TASK_UNAVAILABLE


_TARGET = {ControlAction.PAUSE: TaskStatus.PAUSED, ControlAction.STOP: TaskStatus.STOPPED}
_APPLIED_BARRIER = {ControlAction.PAUSE: Barrier.PAUSED, ControlAction.STOP: Barrier.STOPPED}
_APPLIED_CONSUMER = {
    ControlAction.PAUSE: ConsumerAction.SUSPEND,
    ControlAction.STOP: ConsumerAction.DRAIN,
}


_INVALID = {
    Validity.EXPIRED: ControlRejectReason.COMMAND_EXPIRED,
    Validity.INVALID_WINDOW: ControlRejectReason.INVALID_VALIDITY_WINDOW,
}


def decide(
    barrier: Barrier,
    action: ControlAction,
    read: AuthoritativeRead,
    *,
    validity: Validity = Validity.VALID,
) -> ControlDecision:
    """The control decision table (D-CTL-2..5, D-DISC-7, D-DISC-8, D-NOTE-1, D-NOTE-3).

    ``barrier`` is the persisted barrier at decision time, ``read`` the fresh task GET,
    ``validity`` the control's validity window at decision time.
    """
    if barrier is Barrier.REMOVED:
        return _rejected(barrier, ControlRejectReason.TASK_UNAVAILABLE, ConsumerAction.KEEP)
    if validity is not Validity.VALID:
        return _out_of_window(barrier, _INVALID[validity])
    if barrier is Barrier.STOPPED:
        return _on_stopped(action, read)
    if action is ControlAction.RESUME:
        return _resume(barrier, read)
    if read is _TARGET[action]:
        return _applied(_APPLIED_BARRIER[action], _APPLIED_CONSUMER[action])
    return _rejected(close(barrier), _read_reason(read), ConsumerAction.SUSPEND)


def _on_stopped(action: ControlAction, read: AuthoritativeRead) -> ControlDecision:
    """``stopped`` is irreversible; a stop keeps (or resumes) the drain whatever the read."""
    if action is not ControlAction.STOP:
        return _rejected(Barrier.STOPPED, ControlRejectReason.STATE_MISMATCH, ConsumerAction.KEEP)
    if read is TaskStatus.STOPPED:
        return _applied(Barrier.STOPPED, ConsumerAction.DRAIN)
    return _rejected(Barrier.STOPPED, _read_reason(read), ConsumerAction.DRAIN)


def _out_of_window(barrier: Barrier, reason: ControlRejectReason) -> ControlDecision:
    """Expired or from the future: fail closed, whatever the action (D-NOTE-3).

    Admission closes (``none`` → ``closed``); a tighter barrier stays as it is, so nothing
    is lifted and ``stopped`` is never set; a stopped task's own drain is left alone.
    """
    consumer = ConsumerAction.KEEP if barrier is Barrier.STOPPED else ConsumerAction.SUSPEND
    return _rejected(close(barrier), reason, consumer)


def _resume(barrier: Barrier, read: AuthoritativeRead) -> ControlDecision:
    """Lift only for a fresh, current ``running``, valid ownership, never stopped."""
    if read is TaskStatus.RUNNING:
        return _applied(Barrier.NONE, ConsumerAction.REOPEN)
    return _rejected(close(barrier), _read_reason(read), ConsumerAction.SUSPEND)


def hangs_up(
    action: ControlAction, policy: ActiveCallPolicy | None, decision: ControlDecision
) -> bool:
    """Active calls are hung up only by an applied pause/stop with policy ``hangup``."""
    return (
        decision.applied
        and action is not ControlAction.RESUME
        and policy is ActiveCallPolicy.HANGUP
    )


def consumer_for_barrier(barrier: Barrier) -> ConsumerAction:
    """What a task's consumer must look like for a persisted barrier (restart, discovery)."""
    if barrier is Barrier.NONE:
        return ConsumerAction.REOPEN
    if barrier is Barrier.STOPPED:
        return ConsumerAction.DRAIN
    if barrier is Barrier.REMOVED:
        return ConsumerAction.DROP
    return ConsumerAction.SUSPEND


def verify_read(
    command: ControlCommand,
    config: TaskConfig | ReadFailure,
    local_tenant: tuple[str, str] | None,
    seen_revision: int = 0,
) -> AuthoritativeRead:
    """The authoritative status of a fresh task GET, or why it cannot count (D-CTL-3).

    Ownership must hold: the task config's tenant identity equals the control envelope's
    and the one discovery persisted; otherwise the read is ``invalid`` (task_unavailable).
    A revision below the highest the D has seen for the task is ``stale`` (D-NOTE-1).
    """
    if isinstance(config, ReadFailure):
        return config
    identity = (config.tenant_id, config.tenant_key)
    if config.task_id != command.task_id or identity != (command.tenant_id, command.tenant_key):
        return ReadFailure.INVALID
    if local_tenant is not None and local_tenant != identity:
        return ReadFailure.INVALID
    if is_stale(config.task_revision, seen_revision):
        return ReadFailure.STALE
    return config.status


def is_stale(revision: int, seen_revision: int) -> bool:
    """Revisions only move forward (D-NOTE-1): an answer below the highest seen is stale;
    the same revision again is current."""
    return revision < seen_revision


@dataclass(frozen=True)
class ControlJob:
    """One persisted processing of a task.control (its receipt event_id is fixed here)."""

    seq: int
    event_id: str
    command: ControlCommand
    phase: JobPhase
    decision: ControlDecision | None = None

    @property
    def task_id(self) -> str:
        return self.command.task_id


@dataclass(frozen=True)
class TaskFacts:
    """What the store holds about a task at decision time (``tenant`` None: unknown task;
    ``seen_revision``: the highest task revision the D has seen, D-NOTE-1)."""

    barrier: Barrier
    tenant: tuple[str, str] | None
    seen_revision: int = 0
