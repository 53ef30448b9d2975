"""Answering machines (DISPATCHER_AMD): the D's setting, validated at start, pinned in every
accepted call's plan (D-CMD-3: the plan of an execution never changes after admission) and
carried to the cell in the originate request; unset, the cell's default applies."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import pytest

from agentcall.cell.calls.plan import parse_plan
from agentcall.cell.domain.model import AmdAction
from agentcall.dispatcher.calls.plan import cell_plan
from agentcall.dispatcher.cell.adapter import to_plan
from agentcall.dispatcher.domain.admission import Accept, Plan, decide
from agentcall.dispatcher.settings import SettingsError, load_settings
from tests.support import dispatcher_factories as f
from tests.support.agent_configs import FULL_AI

from .test_settings import ENV


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),  # unset: the cell's default (CELL_AMD)
        ("off", "off"),
        ("hangup", "hangup"),
        ("LEAVE_MESSAGE", "leave_message"),
    ],
)
def test_the_setting_is_read(raw: str | None, expected: str | None) -> None:
    env = ENV if raw is None else {**ENV, "DISPATCHER_AMD": raw}
    assert load_settings(env).amd == expected


def test_an_unknown_setting_stops_the_start_naming_it() -> None:
    with pytest.raises(SettingsError, match="DISPATCHER_AMD is invalid: must be one of off"):
        load_settings({**ENV, "DISPATCHER_AMD": "voicemail"})


def accepted(amd: str | None) -> Plan:
    base: dict[str, Any] = {
        "command": f.command(),
        "task": f.view(config=f.task_config(agent=f.agent(config_json=json.dumps(FULL_AI)))),
        "sip": f.sip(f.trunk(server_host="sip.example.invalid", server_port=5060)),
        "quota": f.quota(),
        "occupancy": f.occupancy(),
        "now": f.NOW,
    }
    result = decide(**base, amd=amd)
    assert isinstance(result, Accept)
    return result.plan


@pytest.mark.parametrize("amd", [None, "off", "hangup", "leave_message"])
def test_admission_pins_it_and_the_cell_reads_it_d_cmd_3(amd: str | None) -> None:
    plan = accepted(amd)
    assert plan.amd == amd
    stored = Plan(**json.loads(json.dumps(asdict(plan))))  # the execution row's snapshot
    body = cell_plan("exec-1", "call-1", stored)
    assert body.amd == amd
    wire = to_plan(body).to_json()  # the D's adapter → the cell client's request body
    assert ("amd" in wire) is (amd is not None)
    read = parse_plan(wire)  # the cell's boundary
    assert read.amd == (None if amd is None else AmdAction(amd))


def test_a_plan_stored_before_the_setting_existed_still_reads() -> None:
    row = asdict(accepted(None))
    del row["amd"]
    assert Plan(**row).amd is None
