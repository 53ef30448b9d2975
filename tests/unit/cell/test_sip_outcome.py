"""Final SIP status -> call.result outcome and reason_code (D-RES-2: outcome is the call's)."""

from __future__ import annotations

import pytest

from agentcall.cell.sip.outcome import (
    CallOutcome,
    CancelCause,
    outcome_for_final,
    outcome_for_timeout,
)

RT = CancelCause.RING_TIMEOUT
HU = CancelCause.HANGUP_REQUESTED


@pytest.mark.parametrize(
    ("status", "cause", "outcome", "reason"),
    [
        (486, None, CallOutcome.BUSY, "sip_486"),
        (600, None, CallOutcome.BUSY, "sip_600"),
        (603, None, CallOutcome.REJECTED, "sip_603"),
        (408, RT, CallOutcome.NO_ANSWER, "ring_timeout"),
        (480, RT, CallOutcome.NO_ANSWER, "ring_timeout"),
        (487, RT, CallOutcome.NO_ANSWER, "ring_timeout"),
        (487, HU, CallOutcome.FAILED, "hangup_requested"),
        (480, None, CallOutcome.FAILED, "sip_480"),
        (404, None, CallOutcome.FAILED, "sip_404"),
        (302, None, CallOutcome.FAILED, "sip_302"),
        (503, None, CallOutcome.FAILED, "sip_503"),
        (606, None, CallOutcome.FAILED, "sip_606"),
        (486, RT, CallOutcome.BUSY, "sip_486"),
    ],
)
def test_status_to_outcome(
    status: int, cause: CancelCause | None, outcome: CallOutcome, reason: str
) -> None:
    end = outcome_for_final(status, cause)
    assert (end.outcome, end.reason_code) == (outcome, reason)


@pytest.mark.parametrize("status", [100, 180, 200, 299, 700])
def test_non_failure_status_is_a_bug(status: int) -> None:
    with pytest.raises(ValueError):
        outcome_for_final(status, None)


@pytest.mark.parametrize(
    ("cause", "outcome"),
    [(None, CallOutcome.FAILED), (RT, CallOutcome.NO_ANSWER), (HU, CallOutcome.FAILED)],
)
def test_timeouts(cause: CancelCause | None, outcome: CallOutcome) -> None:
    assert outcome_for_timeout(cause).outcome is outcome
