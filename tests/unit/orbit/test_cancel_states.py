"""O-CAN-1 cancel rules and O-STATE-1 transitions."""

from __future__ import annotations

from typing import Any

import pytest

from orbit.domain.cancel import CancelRequest, cancel_digest, decide_cancel, parse_cancel
from orbit.domain.errors import IllegalTransition, InvalidArgument, StateConflict
from orbit.domain.jsonvalue import JsonNumber
from orbit.domain.states import TERMINAL, TRANSITIONS, TaskState, check_transition

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


@pytest.mark.parametrize(
    ("state", "revision", "expected", "outcome"),
    [
        (TaskState.WAITING, 1, 1, 2),
        (TaskState.WAITING, 5, 5, 6),
        (TaskState.WAITING, 2, 1, StateConflict),
        (TaskState.CANCELLED, 2, 1, StateConflict),
        (TaskState.CANCELLED, 2, 2, StateConflict),
        (TaskState.LEASED, 2, 2, StateConflict),
        (TaskState.RUNNING, 3, 3, StateConflict),
        (TaskState.SUCCEEDED, 4, 4, StateConflict),
    ],
)
def test_o_can_1_decide(
    state: TaskState, revision: int, expected: int, outcome: int | type[Exception]
) -> None:
    """O-CAN-1: only WAITING tasks at the expected revision are cancelled; revision + 1."""
    request = CancelRequest(expected, "r")
    if isinstance(outcome, int):
        assert decide_cancel(state, revision, request) == outcome
    else:
        with pytest.raises(outcome):
            decide_cancel(state, revision, request)


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
        "WAITING", "LEASED", "RUNNING", "NEEDS_REVIEW", "SUCCEEDED", "FAILED", "CANCELLED",
    ]  # fmt: skip
    assert TaskState.CANCELLED.terminal and not TaskState.NEEDS_REVIEW.terminal
