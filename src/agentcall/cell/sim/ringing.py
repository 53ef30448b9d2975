"""How the set-up phase of a simulated call ends (pure): answered, or not and why."""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.cell.domain.model import EndCause, Outcome, ReasonCode
from agentcall.cell.sim.script import Behaviour


@dataclass(frozen=True)
class SetupResult:
    rings: bool  # a ringing event is reported
    at_ms: int  # when the set-up phase ends (ms since dialling)
    answered: bool
    outcome: Outcome
    reason_code: str | None
    cause: EndCause


def _timed_out(ring_timeout_ms: int) -> SetupResult:
    return SetupResult(
        rings=True,
        at_ms=ring_timeout_ms,
        answered=False,
        outcome=Outcome.NO_ANSWER,
        reason_code=ReasonCode.RING_TIMEOUT.value,
        cause=EndCause.LIMIT,
    )


def setup(behaviour: Behaviour, ring_timeout_ms: int) -> SetupResult:
    """The set-up phase for ``behaviour`` under the plan's ring timeout."""
    outcome, ring_ms = behaviour.outcome, behaviour.ring_ms
    rings = outcome in (Outcome.ANSWERED, Outcome.NO_ANSWER, Outcome.REJECTED)
    if ring_ms is None or (rings and ring_ms >= ring_timeout_ms):
        return _timed_out(ring_timeout_ms)
    at_ms = min(ring_ms, ring_timeout_ms)
    if outcome is Outcome.ANSWERED:
        return SetupResult(True, at_ms, True, outcome, None, EndCause.CALLEE)
    default_reason = {
        Outcome.NO_ANSWER: ReasonCode.NO_ANSWER,
        Outcome.BUSY: ReasonCode.BUSY,
        Outcome.REJECTED: ReasonCode.REJECTED,
        Outcome.FAILED: ReasonCode.NETWORK_FAILURE,
    }[outcome].value
    cause = EndCause.NETWORK if outcome is Outcome.FAILED else EndCause.CALLEE
    return SetupResult(rings, at_ms, False, outcome, behaviour.reason_code or default_reason, cause)
