"""O-CAN-1 cancel rules and O-STATE-1 transitions."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.orbit.domain.cancel import (
    CancelMode,
    CancelPlan,
    CancelRequest,
    cancel_digest,
    parse_cancel,
    plan_cancel,
)
from agentcall.orbit.domain.errors import IllegalTransition, InvalidArgument, StateConflict
from agentcall.orbit.domain.jsonvalue import JsonNumber
from agentcall.orbit.domain.states import TERMINAL, TRANSITIONS, TaskState, check_transition

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reason": "r"}, "expected_revision"),
        ({"expected_revision": JsonNumber("1"), "reason": "r"}, "expected_revision"),
        ({"expected_revision": "0", "reason": "r"}, "expected_revision"),
        ({"expected_revision": "01", "reason": "r"}, "expected_revision"),
        ({"expected_revision": None, "reason": "r"}, "expected_revision"),
        ({"expected_revision": "1"}, "reason"),
        ({"expected_revision": "1", "reason": " \t\n"}, "reason"),
        ({"expected_revision": "1", "reason": ""}, "reason"),
        ({"expected_revision": "1", "reason": "r" * 1025}, "reason"),
        ({"expected_revision": "1", "reason": None}, "reason"),
        ({"expected_revision": "1", "reason": "r", "force": True}, "force"),
        ({"Expected_Revision": "1", "reason": "r"}, "Expected_Revision"),
    ],
)
def test_o_can_1_body_rejected(body: dict[str, Any], field: str) -> None:
    """O-CAN-1: expected_revision is a non-zero uint64 string; reason non-blank, <= 1024."""
    with pytest.raises(InvalidArgument) as caught:
        parse_cancel(body)
    assert caught.value.field == field


def test_o_can_1_body_accepted() -> None:
    assert parse_cancel({"expected_revision": "7", "reason": "é" * 1024}) == CancelRequest(
        7, "é" * 1024
    )


_NOW, _END, _REQ = CancelMode.NOW, CancelMode.END_LEASE, CancelMode.REQUEST


@pytest.mark.parametrize(
    ("state", "revision", "expected", "requested", "outcome"),
    [
        (TaskState.WAITING, 1, 1, False, CancelPlan(_NOW, 2)),
        (TaskState.WAITING, 5, 5, False, CancelPlan(_NOW, 6)),
        (TaskState.WAITING, 2, 1, False, StateConflict),
        (TaskState.CANCELLED, 2, 1, False, StateConflict),
        (TaskState.CANCELLED, 2, 2, False, StateConflict),
        (TaskState.LEASED, 2, 2, False, CancelPlan(_END, 3)),
        (TaskState.LEASED, 2, 1, False, StateConflict),
        (TaskState.RUNNING, 3, 3, False, CancelPlan(_REQ, 4)),
        (TaskState.RUNNING, 4, 4, True, StateConflict),
        (TaskState.RUNNING, 3, 2, False, StateConflict),
        (TaskState.NEEDS_REVIEW, 4, 4, False, StateConflict),
        (TaskState.SUCCEEDED, 4, 4, False, StateConflict),
        (TaskState.FAILED, 4, 4, False, StateConflict),
    ],
)
def test_o_can_1_decide(
    state: TaskState,
    revision: int,
    expected: int,
    requested: bool,
    outcome: CancelPlan | type[Exception],
) -> None:
    """O-CAN-1 + task-control.md §3: WAITING cancels at once, LEASED ends its unstarted attempt,
    RUNNING records a request (once); only at the expected revision; revision + 1."""
    request = CancelRequest(expected, "r")
    if isinstance(outcome, CancelPlan):
        assert plan_cancel(state, revision, request, requested=requested) == outcome
    else:
        with pytest.raises(outcome):
            plan_cancel(state, revision, request, requested=requested)


def test_o_can_1_digest_covers_revision_and_reason() -> None:
    base = cancel_digest(CancelRequest(1, "r"))
    assert base == cancel_digest(CancelRequest(1, "r"))
    assert base != cancel_digest(CancelRequest(2, "r"))
    assert base != cancel_digest(CancelRequest(1, "r "))


@pytest.mark.parametrize(
    ("source", "target", "allowed"),
    [(s, t, t in TRANSITIONS[s]) for s in TaskState for t in TaskState],
)
def test_o_state_1_transition_table(source: TaskState, target: TaskState, allowed: bool) -> None:
    """O-STATE-1: illegal transitions raise; terminal states have no way out."""
    if allowed:
        check_transition(source, target)
    else:
        with pytest.raises(IllegalTransition):
            check_transition(source, target)
    if source in TERMINAL:
        assert not allowed


def test_o_state_1_states_are_the_contract() -> None:
    assert [s.value for s in TaskState] == [
        "WAITING",
        "LEASED",
        "RUNNING",
        "NEEDS_REVIEW",
        "SUCCEEDED",
        "FAILED",
        "CANCELLED",
    ]
    assert TaskState.CANCELLED.terminal and not TaskState.NEEDS_REVIEW.terminal
