"""Persisted state enums of the Dispatcher and their legal transitions.

Illegal transitions raise :class:`IllegalTransition`; the stores only ever persist values
returned by these functions.
"""

from __future__ import annotations

from enum import StrEnum

from agentcall.dispatcher.errors import DispatcherError


class IllegalTransition(DispatcherError):
    """A state change the rules forbid was attempted; it is a bug in the caller, not bad input.

    Fix the calling code path: read the current state first and only ask for a legal move.
    """


class TaskStatus(StrEnum):
    """Authoritative SaaS status of a task (discovery page or task GET, D-DISC-2)."""

    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"
    FINISHED = "finished"
    REMOVED = "removed"


class Barrier(StrEnum):
    """Local admission barrier of a task; only tightens admission (D-DISC-7, D-CTL-5).

    none → closed → paused ↔ none; any → stopped (irreversible); any → removed (tombstone).
    ``closed`` = admission closed until a verified resume (D-CTL-5, or a discovery
    paused/stopped seen before its control). The control state machine of task.control
    is :mod:`agentcall.dispatcher.domain.control`.
    """

    NONE = "none"
    CLOSED = "closed"
    PAUSED = "paused"
    STOPPED = "stopped"
    REMOVED = "removed"


def barrier_after_discovery(current: Barrier, status: TaskStatus, *, newer: bool = True) -> Barrier:
    """Barrier after a discovery row (D-DISC-7, D-DISC-8): it never lifts a barrier.

    ``removed`` is a tombstone; a ``paused``/``stopped`` row closes admission at once (the
    backlog stays queued until the control arrives) unless it is not ``newer`` than the
    task revision a control already verified with a fresh task GET.
    """
    if status is TaskStatus.REMOVED:
        return Barrier.REMOVED
    if newer and current is Barrier.NONE and status in (TaskStatus.PAUSED, TaskStatus.STOPPED):
        return Barrier.CLOSED
    return current


class ExecutionState(StrEnum):
    """Lifecycle of an accepted call (ARCHITECTURE: crash rule)."""

    ACCEPTED = "accepted"
    DIALING = "dialing"
    RINGING = "ringing"
    IN_CALL = "in_call"
    ENDED = "ended"
    FINALIZED = "finalized"
    UNKNOWN = "unknown"

    @property
    def holds_occupancy(self) -> bool:
        """D-CMD-4: released only once the call is confirmed ended; unknown keeps it."""
        return self not in (ExecutionState.ENDED, ExecutionState.FINALIZED)


_LIVE = {ExecutionState.DIALING, ExecutionState.RINGING, ExecutionState.IN_CALL}
_EXECUTION_MOVES: dict[ExecutionState, frozenset[ExecutionState]] = {
    ExecutionState.ACCEPTED: frozenset({ExecutionState.DIALING, ExecutionState.ENDED}),
    ExecutionState.DIALING: frozenset(
        {
            ExecutionState.RINGING,
            ExecutionState.IN_CALL,
            ExecutionState.ENDED,
            ExecutionState.UNKNOWN,
        }
    ),
    ExecutionState.RINGING: frozenset(
        {ExecutionState.IN_CALL, ExecutionState.ENDED, ExecutionState.UNKNOWN}
    ),
    ExecutionState.IN_CALL: frozenset({ExecutionState.ENDED, ExecutionState.UNKNOWN}),
    ExecutionState.UNKNOWN: frozenset(_LIVE | {ExecutionState.ENDED}),
    ExecutionState.ENDED: frozenset({ExecutionState.FINALIZED}),
    ExecutionState.FINALIZED: frozenset(),
}


def move_execution(current: ExecutionState, target: ExecutionState) -> ExecutionState:
    """Return ``target`` if the move is legal; staying in place is always legal."""
    if target is current or target in _EXECUTION_MOVES[current]:
        return target
    raise IllegalTransition(f"execution cannot go from {current} to {target}")


class OutboxState(StrEnum):
    """State of one outgoing event in the durable outbox (D-MQ-4, D-ID-3)."""

    PENDING = "pending"
    DELIVERED = "delivered"
    BLOCKED_PAYLOAD_TOO_LARGE = "blocked_payload_too_large"


class InboxDecision(StrEnum):
    """What the D did with a call.execute, recorded under its command_id (D-CMD-1)."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    DISCARDED_STOPPED = "discarded_stopped"
