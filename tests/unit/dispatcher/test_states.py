"""Persisted state enums: legal moves only (D-CMD-4 occupancy, crash rule)."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.domain.states import (
    Barrier,
    IllegalTransition,
    TaskStatus,
    barrier_after_discovery,
    move_execution,
)
from agentcall.dispatcher.domain.states import (
    ExecutionState as S,
)

LEGAL = [
    (S.ACCEPTED, S.DIALING),
    (S.DIALING, S.RINGING),
    (S.DIALING, S.ENDED),
    (S.RINGING, S.IN_CALL),
    (S.IN_CALL, S.ENDED),
    (S.DIALING, S.UNKNOWN),
    (S.UNKNOWN, S.ENDED),
    (S.ENDED, S.FINALIZED),
    (S.IN_CALL, S.IN_CALL),
]
ILLEGAL = [
    (S.FINALIZED, S.DIALING),
    (S.ENDED, S.DIALING),
    (S.ACCEPTED, S.IN_CALL),
    (S.IN_CALL, S.DIALING),
    (S.ACCEPTED, S.FINALIZED),
    (S.UNKNOWN, S.FINALIZED),
]


@pytest.mark.parametrize(("src", "dst"), LEGAL)
def test_legal_execution_moves(src: S, dst: S) -> None:
    assert move_execution(src, dst) is dst


@pytest.mark.parametrize(("src", "dst"), ILLEGAL)
def test_illegal_execution_moves_raise(src: S, dst: S) -> None:
    with pytest.raises(IllegalTransition):
        move_execution(src, dst)


@pytest.mark.parametrize(
    ("state", "holds"),
    [
        (S.ACCEPTED, True),
        (S.DIALING, True),
        (S.IN_CALL, True),
        (S.UNKNOWN, True),
        (S.ENDED, False),
        (S.FINALIZED, False),
    ],
)
def test_occupancy_released_only_at_confirmed_end_d_cmd_4(state: S, holds: bool) -> None:
    assert state.holds_occupancy is holds


@pytest.mark.parametrize(
    ("barrier", "status", "after"),
    [
        (Barrier.PAUSED, TaskStatus.RUNNING, Barrier.PAUSED),
        (Barrier.STOPPED, TaskStatus.RUNNING, Barrier.STOPPED),
        (Barrier.NONE, TaskStatus.PAUSED, Barrier.CLOSED),
        (Barrier.NONE, TaskStatus.STOPPED, Barrier.CLOSED),
        (Barrier.NONE, TaskStatus.RUNNING, Barrier.NONE),
        (Barrier.NONE, TaskStatus.FINISHED, Barrier.NONE),
        (Barrier.CLOSED, TaskStatus.RUNNING, Barrier.CLOSED),
        (Barrier.PAUSED, TaskStatus.STOPPED, Barrier.PAUSED),
        (Barrier.NONE, TaskStatus.REMOVED, Barrier.REMOVED),
        (Barrier.STOPPED, TaskStatus.REMOVED, Barrier.REMOVED),
    ],
)
def test_discovery_never_lifts_a_barrier_d_disc_7(
    barrier: Barrier, status: TaskStatus, after: Barrier
) -> None:
    assert barrier_after_discovery(barrier, status) is after


def test_discovery_older_than_a_verified_control_does_not_close_d_disc_7() -> None:
    """A paused row not newer than the revision a resume verified must not re-close."""
    assert barrier_after_discovery(Barrier.NONE, TaskStatus.PAUSED, newer=False) is Barrier.NONE
    assert barrier_after_discovery(Barrier.NONE, TaskStatus.REMOVED, newer=False) is Barrier.REMOVED
