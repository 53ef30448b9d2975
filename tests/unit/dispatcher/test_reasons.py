"""The reason-code enums mirror the one list in the contract schema (D-CMD-3, D-CTL-5)."""

from __future__ import annotations

from agentcall.dispatcher import contracts
from agentcall.dispatcher.domain.reasons import ControlRejectReason, RejectReason


def test_execute_reasons_match_schema() -> None:
    assert {r.value for r in RejectReason} == contracts.execute_reject_reasons()


def test_control_reasons_match_schema() -> None:
    assert {r.value for r in ControlRejectReason} == contracts.control_reject_reasons()
