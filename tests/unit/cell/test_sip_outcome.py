"""Final SIP status -> call.result outcome and reason_code (D-RES-2: outcome is the call's)."""

from __future__ import annotations

import pytest

from agentcall.cell.domain.model import Outcome
from agentcall.cell.sip.outcome import (
    CancelCause,
    outcome_for_final,
    outcome_for_timeout,
)

RT = CancelCause.RING_TIMEOUT
HU = CancelCause.HANGUP_REQUESTED


@pytest.mark.parametrize(
    ("status", "cause", "outcome", "reason"),
    [
        (486, None, Outcome.BUSY, "sip_486"),
        (600, None, Outcome.BUSY, "sip_600"),
        (603, None, Outcome.REJECTED, "sip_603"),
        (408, RT, Outcome.NO_ANSWER, "ring_timeout"),
        (480, RT, Outcome.NO_ANSWER, "ring_timeout"),
        (487, RT, Outcome.NO_ANSWER, "ring_timeout"),
        (487, HU, Outcome.FAILED, "hangup_requested"),
        (480, None, Outcome.FAILED, "sip_480"),
        (404, None, Outcome.FAILED, "sip_404"),
        (302, None, Outcome.FAILED, "sip_302"),
        (503, None, Outcome.FAILED, "sip_503"),
        (606, None, Outcome.FAILED, "sip_606"),
        (486, RT, Outcome.BUSY, "sip_486"),
    ],
)
def test_status_to_outcome(
    status: int, cause: CancelCause | None, outcome: Outcome, reason: str
) -> None:
    end = outcome_for_final(status, cause)
    assert (end.outcome, end.reason_code) == (outcome, reason)


@pytest.mark.parametrize("status", [100, 180, 200, 299, 700])
def test_non_failure_status_is_a_bug(status: int) -> None:
    with pytest.raises(ValueError):
        outcome_for_final(status, None)


@pytest.mark.parametrize(
    ("cause", "outcome"),
    [(None, Outcome.FAILED), (RT, Outcome.NO_ANSWER), (HU, Outcome.FAILED)],
)
def test_timeouts(cause: CancelCause | None, outcome: Outcome) -> None:
    assert outcome_for_timeout(cause).outcome is outcome
