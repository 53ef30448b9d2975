"""Reading the call plan the D pins (D-CMD-3) at the cell's boundary."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.cell.calls.plan import parse_plan
from agentcall.cell.domain.errors import InvalidPlanError

from .plans import plan_body


def test_plan_is_read_with_raw_caller_id_and_prefix_d_cfg_1() -> None:
    """D-CFG-1: caller_id is kept raw (letters such as BD survive)."""
    plan = parse_plan(plan_body())
    assert plan.caller_id == "BD00000000"
    assert plan.dial_string == "915003164745"
    assert plan.trunk.server_port == 5060 and plan.trunk.transport is None
    assert plan.recording_upload is None and plan.tags == {}


def test_digest_ignores_upload_target_and_tags_only() -> None:
    base = parse_plan(plan_body()).digest
    upload = {"upload_id": "u1", "url": "https://s3.example/x?sig=1"}
    assert parse_plan(plan_body(recording_upload=upload, tags={"task_id": "t"})).digest == base
    assert parse_plan(plan_body(ring_timeout_ms=1000)).digest != base


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"call_id": "bad id"}, "call_id"),
        ({"call_id": "../etc"}, "call_id"),
        ({"call_id": "x" * 129}, "call_id"),
        ({"callee": ""}, "callee"),
        ({"callee": "150 0316"}, "callee"),
        ({"caller_id": 12}, "caller_id"),
        ({"ring_timeout_ms": 0}, "ring_timeout_ms"),
        ({"max_duration_ms": True}, "max_duration_ms"),
        ({"trunk": {"dial_prefix": "9"}}, "trunk.trunk_id"),
        ({"trunk": {"trunk_id": "t", "server_port": 70000}}, "trunk.server_port"),
        ({"trunk": {"trunk_id": "t", "codec": "PCMA"}}, "trunk.codec"),
        ({"agent": None}, "agent"),
        ({"agent": {"mode": "full_ai"}}, "agent.llm"),
        ({"recording_upload": {"upload_id": "u", "url": "ftp://x"}}, "recording_upload.url"),
        ({"tags": {"a": 1}}, "tags.a"),
        ({"priority": 1}, "priority"),
    ],
)
def test_invalid_plan_names_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidPlanError) as info:
        parse_plan(plan_body(**fields))
    assert info.value.field == field


def test_missing_field_is_named() -> None:
    body = plan_body()
    del body["ring_timeout_ms"]
    with pytest.raises(InvalidPlanError, match="ring_timeout_ms is required"):
        parse_plan(body)
