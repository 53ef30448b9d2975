"""Set-up phase of a simulated call: outcome, reason code and timing per behaviour."""

from __future__ import annotations

import pytest

from agentcall.cell.domain.model import EndCause, Outcome
from agentcall.cell.sim.ringing import SetupResult, setup
from agentcall.cell.sim.script import Behaviour


def _b(outcome: Outcome, ring_ms: int | None, reason: str | None = None) -> Behaviour:
    return Behaviour(outcome, ring_ms, None, (), True, reason)


TIMEOUT = SetupResult(True, 30000, False, Outcome.NO_ANSWER, "ring_timeout", EndCause.LIMIT)


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        (
            _b(Outcome.ANSWERED, 2000),
            SetupResult(True, 2000, True, Outcome.ANSWERED, None, EndCause.CALLEE),
        ),
        (_b(Outcome.ANSWERED, 30000), TIMEOUT),  # answering at the timeout is too late
        (_b(Outcome.NO_ANSWER, None), TIMEOUT),
        (_b(Outcome.NO_ANSWER, 99999), TIMEOUT),
        (
            _b(Outcome.NO_ANSWER, 5000),
            SetupResult(True, 5000, False, Outcome.NO_ANSWER, "no_answer", EndCause.CALLEE),
        ),
        (
            _b(Outcome.BUSY, 500),
            SetupResult(False, 500, False, Outcome.BUSY, "busy", EndCause.CALLEE),
        ),
        (
            _b(Outcome.BUSY, 99999),
            SetupResult(False, 30000, False, Outcome.BUSY, "busy", EndCause.CALLEE),
        ),
        (
            _b(Outcome.REJECTED, 3000),
            SetupResult(True, 3000, False, Outcome.REJECTED, "rejected", EndCause.CALLEE),
        ),
        (_b(Outcome.REJECTED, 40000), TIMEOUT),
        (
            _b(Outcome.FAILED, 100, "sip_503"),
            SetupResult(False, 100, False, Outcome.FAILED, "sip_503", EndCause.NETWORK),
        ),
        (
            _b(Outcome.FAILED, 100),
            SetupResult(False, 100, False, Outcome.FAILED, "network_failure", EndCause.NETWORK),
        ),
    ],
)
def test_setup_outcomes(behaviour: Behaviour, expected: SetupResult) -> None:
    assert setup(behaviour, ring_timeout_ms=30000) == expected
