"""The task-control decision table, every cell (D-CTL-2..5, D-DISC-7, D-DISC-8, D-NOTE-1,
D-NOTE-3).

One row per (barrier, action, authoritative read). ``FAIL`` expands to every way the
fresh task GET can fail (unavailable, not_found, refused, invalid): all of them mean
``task_unavailable`` (D-CTL-5). ``finished|stale``: a stale read (a revision below the
highest seen, D-NOTE-1) decides like a status contradicting every action. Columns after
``->``: new barrier, receipt status, reason_code, task_state, consumer action.
"""

from __future__ import annotations

import itertools

import pytest

from agentcall.dispatcher.domain.control import (
    ActiveCallPolicy,
    AuthoritativeRead,
    ConsumerAction,
    ControlAction,
    ControlDecision,
    JobPhase,
    ReadFailure,
    ReceiptState,
    ReceiptStatus,
    admits,
    close,
    consumer_for_barrier,
    decide,
    hangs_up,
    move_barrier,
    move_phase,
)
from agentcall.dispatcher.domain.states import Barrier, IllegalTransition, TaskStatus
from agentcall.dispatcher.domain.validity import Validity

TABLE = """
none    pause  running  -> closed  rejected state_mismatch   closed  suspend
none    pause  paused   -> paused  applied  applied          paused  suspend
none    pause  stopped  -> closed  rejected state_mismatch   closed  suspend
none    pause  finished|stale -> closed  rejected state_mismatch   closed  suspend
none    pause  removed  -> closed  rejected state_mismatch   closed  suspend
none    pause  FAIL     -> closed  rejected task_unavailable closed  suspend
none    resume running  -> none    applied  applied          running reopen
none    resume paused   -> closed  rejected state_mismatch   closed  suspend
none    resume stopped  -> closed  rejected state_mismatch   closed  suspend
none    resume finished|stale -> closed  rejected state_mismatch   closed  suspend
none    resume removed  -> closed  rejected state_mismatch   closed  suspend
none    resume FAIL     -> closed  rejected task_unavailable closed  suspend
none    stop   running  -> closed  rejected state_mismatch   closed  suspend
none    stop   paused   -> closed  rejected state_mismatch   closed  suspend
none    stop   stopped  -> stopped applied  applied          stopped drain
none    stop   finished|stale -> closed  rejected state_mismatch   closed  suspend
none    stop   removed  -> closed  rejected state_mismatch   closed  suspend
none    stop   FAIL     -> closed  rejected task_unavailable closed  suspend
closed  pause  running  -> closed  rejected state_mismatch   closed  suspend
closed  pause  paused   -> paused  applied  applied          paused  suspend
closed  pause  stopped  -> closed  rejected state_mismatch   closed  suspend
closed  pause  finished|stale -> closed  rejected state_mismatch   closed  suspend
closed  pause  removed  -> closed  rejected state_mismatch   closed  suspend
closed  pause  FAIL     -> closed  rejected task_unavailable closed  suspend
closed  resume running  -> none    applied  applied          running reopen
closed  resume paused   -> closed  rejected state_mismatch   closed  suspend
closed  resume stopped  -> closed  rejected state_mismatch   closed  suspend
closed  resume finished|stale -> closed  rejected state_mismatch   closed  suspend
closed  resume removed  -> closed  rejected state_mismatch   closed  suspend
closed  resume FAIL     -> closed  rejected task_unavailable closed  suspend
closed  stop   running  -> closed  rejected state_mismatch   closed  suspend
closed  stop   paused   -> closed  rejected state_mismatch   closed  suspend
closed  stop   stopped  -> stopped applied  applied          stopped drain
closed  stop   finished|stale -> closed  rejected state_mismatch   closed  suspend
closed  stop   removed  -> closed  rejected state_mismatch   closed  suspend
closed  stop   FAIL     -> closed  rejected task_unavailable closed  suspend
paused  pause  running  -> paused  rejected state_mismatch   paused  suspend
paused  pause  paused   -> paused  applied  applied          paused  suspend
paused  pause  stopped  -> paused  rejected state_mismatch   paused  suspend
paused  pause  finished|stale -> paused  rejected state_mismatch   paused  suspend
paused  pause  removed  -> paused  rejected state_mismatch   paused  suspend
paused  pause  FAIL     -> paused  rejected task_unavailable paused  suspend
paused  resume running  -> none    applied  applied          running reopen
paused  resume paused   -> paused  rejected state_mismatch   paused  suspend
paused  resume stopped  -> paused  rejected state_mismatch   paused  suspend
paused  resume finished|stale -> paused  rejected state_mismatch   paused  suspend
paused  resume removed  -> paused  rejected state_mismatch   paused  suspend
paused  resume FAIL     -> paused  rejected task_unavailable paused  suspend
paused  stop   running  -> paused  rejected state_mismatch   paused  suspend
paused  stop   paused   -> paused  rejected state_mismatch   paused  suspend
paused  stop   stopped  -> stopped applied  applied          stopped drain
paused  stop   finished|stale -> paused  rejected state_mismatch   paused  suspend
paused  stop   removed  -> paused  rejected state_mismatch   paused  suspend
paused  stop   FAIL     -> paused  rejected task_unavailable paused  suspend
stopped pause  running  -> stopped rejected state_mismatch   stopped keep
stopped pause  paused   -> stopped rejected state_mismatch   stopped keep
stopped pause  stopped  -> stopped rejected state_mismatch   stopped keep
stopped pause  finished|stale -> stopped rejected state_mismatch   stopped keep
stopped pause  removed  -> stopped rejected state_mismatch   stopped keep
stopped pause  FAIL     -> stopped rejected state_mismatch   stopped keep
stopped resume running  -> stopped rejected state_mismatch   stopped keep
stopped resume paused   -> stopped rejected state_mismatch   stopped keep
stopped resume stopped  -> stopped rejected state_mismatch   stopped keep
stopped resume finished|stale -> stopped rejected state_mismatch   stopped keep
stopped resume removed  -> stopped rejected state_mismatch   stopped keep
stopped resume FAIL     -> stopped rejected state_mismatch   stopped keep
stopped stop   running  -> stopped rejected state_mismatch   stopped drain
stopped stop   paused   -> stopped rejected state_mismatch   stopped drain
stopped stop   stopped  -> stopped applied  applied          stopped drain
stopped stop   finished|stale -> stopped rejected state_mismatch   stopped drain
stopped stop   removed  -> stopped rejected state_mismatch   stopped drain
stopped stop   FAIL     -> stopped rejected task_unavailable stopped drain
removed pause  running  -> removed rejected task_unavailable closed  keep
removed pause  paused   -> removed rejected task_unavailable closed  keep
removed pause  stopped  -> removed rejected task_unavailable closed  keep
removed pause  finished|stale -> removed rejected task_unavailable closed  keep
removed pause  removed  -> removed rejected task_unavailable closed  keep
removed pause  FAIL     -> removed rejected task_unavailable closed  keep
removed resume running  -> removed rejected task_unavailable closed  keep
removed resume paused   -> removed rejected task_unavailable closed  keep
removed resume stopped  -> removed rejected task_unavailable closed  keep
removed resume finished|stale -> removed rejected task_unavailable closed  keep
removed resume removed  -> removed rejected task_unavailable closed  keep
removed resume FAIL     -> removed rejected task_unavailable closed  keep
removed stop   running  -> removed rejected task_unavailable closed  keep
removed stop   paused   -> removed rejected task_unavailable closed  keep
removed stop   stopped  -> removed rejected task_unavailable closed  keep
removed stop   finished|stale -> removed rejected task_unavailable closed  keep
removed stop   removed  -> removed rejected task_unavailable closed  keep
removed stop   FAIL     -> removed rejected task_unavailable closed  keep
"""

ALL_READS: tuple[AuthoritativeRead, ...] = (*TaskStatus, *ReadFailure)


def _read(token: str) -> AuthoritativeRead:
    return ReadFailure(token) if token in set(ReadFailure) else TaskStatus(token)


def _reads(token: str) -> tuple[AuthoritativeRead, ...]:
    if token == "FAIL":
        return tuple(f for f in ReadFailure if f is not ReadFailure.STALE)
    return tuple(_read(one) for one in token.split("|"))


def _cells() -> list[tuple[Barrier, ControlAction, AuthoritativeRead, ControlDecision]]:
    cells = []
    for line in TABLE.strip().splitlines():
        barrier, action, read, _, new, status, reason, state, consumer = line.split()
        expected = ControlDecision(
            Barrier(new),
            ReceiptStatus(status),
            reason,
            ReceiptState(state),
            ConsumerAction(consumer),
        )
        for one in _reads(read):
            cells.append((Barrier(barrier), ControlAction(action), one, expected))
    return cells


CELLS = _cells()


def test_table_covers_every_cell() -> None:
    """Every (barrier, action, read) combination has exactly one row."""
    keys = [(b, a, r) for b, a, r, _ in CELLS]
    assert len(keys) == len(set(keys)) == len(Barrier) * len(ControlAction) * len(ALL_READS)


@pytest.mark.parametrize(("barrier", "action", "read", "expected"), CELLS)
def test_decision_table_d_ctl_2_to_5(
    barrier: Barrier, action: ControlAction, read: AuthoritativeRead, expected: ControlDecision
) -> None:
    assert decide(barrier, action, read) == expected


OUT_OF_WINDOW = {
    Barrier.NONE: (Barrier.CLOSED, ReceiptState.CLOSED, ConsumerAction.SUSPEND),
    Barrier.CLOSED: (Barrier.CLOSED, ReceiptState.CLOSED, ConsumerAction.SUSPEND),
    Barrier.PAUSED: (Barrier.PAUSED, ReceiptState.PAUSED, ConsumerAction.SUSPEND),
    Barrier.STOPPED: (Barrier.STOPPED, ReceiptState.STOPPED, ConsumerAction.KEEP),
}
WINDOWS = (Validity.EXPIRED, Validity.INVALID_WINDOW)


@pytest.mark.parametrize(
    ("barrier", "action", "read", "window"),
    list(itertools.product(OUT_OF_WINDOW, ControlAction, ALL_READS, WINDOWS)),
)
def test_expired_or_future_control_is_rejected_and_fails_closed_d_note_3(
    barrier: Barrier, action: ControlAction, read: AuthoritativeRead, window: Validity
) -> None:
    """Any action, any read: an explicit rejection with the window's code; admission
    closes, nothing is lifted, ``stopped`` is never set by it."""
    decision = decide(barrier, action, read, validity=window)
    new, state, consumer = OUT_OF_WINDOW[barrier]
    assert decision == ControlDecision(new, ReceiptStatus.REJECTED, window.value, state, consumer)


@pytest.mark.parametrize("window", WINDOWS)
def test_a_removed_task_answers_task_unavailable_even_out_of_window(window: Validity) -> None:
    decision = decide(Barrier.REMOVED, ControlAction.RESUME, TaskStatus.RUNNING, validity=window)
    assert (decision.barrier, decision.reason_code) == (Barrier.REMOVED, "task_unavailable")


EVERY = list(itertools.product(Barrier, ControlAction, ALL_READS, tuple(Validity)))


@pytest.mark.parametrize(("barrier", "action", "read", "window"), EVERY)
def test_every_decision_is_a_legal_barrier_move(
    barrier: Barrier, action: ControlAction, read: AuthoritativeRead, window: Validity
) -> None:
    decision = decide(barrier, action, read, validity=window)
    assert move_barrier(barrier, decision.barrier) is decision.barrier


@pytest.mark.parametrize(("barrier", "action", "read", "window"), EVERY)
def test_a_rejection_leaves_admission_closed_d_ctl_5(
    barrier: Barrier, action: ControlAction, read: AuthoritativeRead, window: Validity
) -> None:
    decision = decide(barrier, action, read, validity=window)
    if decision.status is ReceiptStatus.REJECTED:
        assert not admits(decision.barrier)
        assert decision.task_state is not ReceiptState.RUNNING


@pytest.mark.parametrize(("barrier", "action", "read", "window"), EVERY)
def test_only_a_fresh_running_resume_opens_d_ctl_3_d_disc_7(
    barrier: Barrier, action: ControlAction, read: AuthoritativeRead, window: Validity
) -> None:
    decision = decide(barrier, action, read, validity=window)
    if admits(decision.barrier):
        assert (action, read, window) == (ControlAction.RESUME, TaskStatus.RUNNING, Validity.VALID)
        assert barrier not in (Barrier.STOPPED, Barrier.REMOVED)
        assert decision.consumer is ConsumerAction.REOPEN


@pytest.mark.parametrize(("barrier", "action", "read", "window"), EVERY)
def test_stopped_is_irreversible_d_ctl_4(
    barrier: Barrier, action: ControlAction, read: AuthoritativeRead, window: Validity
) -> None:
    if barrier is Barrier.STOPPED:
        assert decide(barrier, action, read, validity=window).barrier is Barrier.STOPPED


LEGAL_MOVES = [
    (Barrier.NONE, Barrier.CLOSED),
    (Barrier.NONE, Barrier.PAUSED),
    (Barrier.NONE, Barrier.STOPPED),
    (Barrier.CLOSED, Barrier.NONE),
    (Barrier.CLOSED, Barrier.PAUSED),
    (Barrier.PAUSED, Barrier.NONE),
    (Barrier.PAUSED, Barrier.STOPPED),
    (Barrier.STOPPED, Barrier.REMOVED),
    (Barrier.PAUSED, Barrier.REMOVED),
    (Barrier.REMOVED, Barrier.REMOVED),
]
ILLEGAL_MOVES = [
    (Barrier.STOPPED, Barrier.NONE),
    (Barrier.STOPPED, Barrier.PAUSED),
    (Barrier.STOPPED, Barrier.CLOSED),
    (Barrier.PAUSED, Barrier.CLOSED),
    (Barrier.REMOVED, Barrier.NONE),
    (Barrier.REMOVED, Barrier.STOPPED),
    (Barrier.REMOVED, Barrier.CLOSED),
]


@pytest.mark.parametrize(("src", "dst"), LEGAL_MOVES)
def test_legal_barrier_moves(src: Barrier, dst: Barrier) -> None:
    assert move_barrier(src, dst) is dst


@pytest.mark.parametrize(("src", "dst"), ILLEGAL_MOVES)
def test_illegal_barrier_moves_raise_d_ctl_4(src: Barrier, dst: Barrier) -> None:
    with pytest.raises(IllegalTransition):
        move_barrier(src, dst)


@pytest.mark.parametrize(
    ("src", "dst", "legal"),
    [
        (JobPhase.RECEIVED, JobPhase.DECIDED, True),
        (JobPhase.DECIDED, JobPhase.DONE, True),
        (JobPhase.DONE, JobPhase.DONE, True),
        (JobPhase.RECEIVED, JobPhase.DONE, False),
        (JobPhase.DONE, JobPhase.RECEIVED, False),
        (JobPhase.DECIDED, JobPhase.RECEIVED, False),
    ],
)
def test_job_phase_moves(src: JobPhase, dst: JobPhase, legal: bool) -> None:
    if legal:
        assert move_phase(src, dst) is dst
    else:
        with pytest.raises(IllegalTransition):
            move_phase(src, dst)


@pytest.mark.parametrize(
    ("barrier", "closed"),
    [
        (Barrier.NONE, Barrier.CLOSED),
        (Barrier.CLOSED, Barrier.CLOSED),
        (Barrier.PAUSED, Barrier.PAUSED),
        (Barrier.STOPPED, Barrier.STOPPED),
        (Barrier.REMOVED, Barrier.REMOVED),
    ],
)
def test_close_only_tightens_d_ctl_2(barrier: Barrier, closed: Barrier) -> None:
    assert close(barrier) is closed


@pytest.mark.parametrize(
    ("barrier", "consumer"),
    [
        (Barrier.NONE, ConsumerAction.REOPEN),
        (Barrier.CLOSED, ConsumerAction.SUSPEND),
        (Barrier.PAUSED, ConsumerAction.SUSPEND),
        (Barrier.STOPPED, ConsumerAction.DRAIN),
        (Barrier.REMOVED, ConsumerAction.DROP),
    ],
)
def test_consumer_follows_the_persisted_barrier_d_disc_8(
    barrier: Barrier, consumer: ConsumerAction
) -> None:
    assert consumer_for_barrier(barrier) is consumer


@pytest.mark.parametrize(
    ("action", "policy", "read", "hangs"),
    [
        (ControlAction.PAUSE, ActiveCallPolicy.HANGUP, TaskStatus.PAUSED, True),
        (ControlAction.PAUSE, ActiveCallPolicy.DRAIN, TaskStatus.PAUSED, False),
        (ControlAction.PAUSE, ActiveCallPolicy.HANGUP, TaskStatus.RUNNING, False),
        (ControlAction.STOP, ActiveCallPolicy.HANGUP, TaskStatus.STOPPED, True),
        (ControlAction.STOP, ActiveCallPolicy.DRAIN, TaskStatus.STOPPED, False),
        (ControlAction.STOP, ActiveCallPolicy.HANGUP, ReadFailure.UNAVAILABLE, False),
        (ControlAction.RESUME, None, TaskStatus.RUNNING, False),
    ],
)
def test_hangup_only_for_an_applied_pause_or_stop_d_ctl_2_d_ctl_4(
    action: ControlAction,
    policy: ActiveCallPolicy | None,
    read: AuthoritativeRead,
    hangs: bool,
) -> None:
    assert hangs_up(action, policy, decide(Barrier.NONE, action, read)) is hangs
