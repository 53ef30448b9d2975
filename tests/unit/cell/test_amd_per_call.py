"""Answering-machine handling is chosen per call: the plan's ``amd`` (the Dispatcher's
DISPATCHER_AMD) wins over the cell's default (CELL_AMD); the plan's field is validated
where the plan enters the cell, and the client refuses an unknown value before sending."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.cell import client
from agentcall.cell.calls.plan import parse_plan
from agentcall.cell.domain.errors import InvalidPlanError
from agentcall.cell.domain.model import AmdAction
from agentcall.cell.media.hearing import amd_for_call

from .plans import plan_body

OFF, HANGUP, LEAVE = AmdAction.OFF, AmdAction.HANGUP, AmdAction.LEAVE_MESSAGE


@pytest.mark.parametrize(
    ("requested", "default", "opening", "expected"),
    [
        (None, OFF, "Hello.", OFF),  # the plan does not say: the cell's default
        (None, HANGUP, "Hello.", HANGUP),
        (HANGUP, OFF, "Hello.", HANGUP),  # the plan wins over the default
        (OFF, HANGUP, "Hello.", OFF),  # ... also to turn detection off
        (LEAVE, HANGUP, "Hello.", LEAVE),
        (LEAVE, OFF, None, HANGUP),  # no opening line to leave (asr_only): hang up
        (LEAVE, OFF, "", HANGUP),
        (None, LEAVE, None, HANGUP),
        (OFF, LEAVE, None, OFF),
    ],
)
def test_the_plan_chooses_and_the_cell_default_fills_in(
    requested: AmdAction | None, default: AmdAction, opening: str | None, expected: AmdAction
) -> None:
    assert amd_for_call(requested, default, opening) is expected


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, None),
        ({"amd": None}, None),  # null reads as absent, like the plan's other options
        ({"amd": "off"}, OFF),
        ({"amd": "hangup"}, HANGUP),
        ({"amd": "leave_message"}, LEAVE),
    ],
)
def test_the_plan_carries_amd(fields: dict[str, Any], expected: AmdAction | None) -> None:
    assert parse_plan(plan_body(**fields)).amd is expected


@pytest.mark.parametrize("value", ["HANGUP", "maybe", "", 1, True, ["hangup"]])
def test_an_unknown_amd_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(InvalidPlanError) as info:
        parse_plan(plan_body(amd=value))
    assert info.value.field == "amd"


def test_amd_is_part_of_the_plan_digest() -> None:
    """A second originate of the same call_id with another amd is another call."""
    digests = {parse_plan(plan_body(**f)).digest for f in ({}, {"amd": "off"}, {"amd": "hangup"})}
    assert len(digests) == 3


def test_the_client_sends_amd_only_when_chosen_and_refuses_unknown_values() -> None:
    trunk = client.Trunk("trunk-mock")
    base: dict[str, Any] = dict(
        call_id="exec-1",
        trunk=trunk,
        caller_id="BD00000000",
        callee="15003164745",
        ring_timeout_ms=30_000,
        max_duration_ms=120_000,
        agent={},
    )
    assert "amd" not in client.Plan(**base).to_json()
    chosen = client.Plan(**base, amd=client.AmdAction("leave_message"))
    assert chosen.to_json()["amd"] == "leave_message"
    with pytest.raises(ValueError, match="maybe"):
        client.Plan(**base, amd="maybe")  # type: ignore[arg-type]
