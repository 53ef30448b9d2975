"""Classification and validation of received results (D-RES-1, contract §3.5/3.6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from agentcall.mocksaas.domain.results import (
    MAX_BODY_BYTES,
    ResultFacts,
    check_result,
    facts_of,
    parse_body,
    schema_kind,
)

EXAMPLES = find_contracts_dir() / "examples"
RESULT_KINDS = (
    "call-result.call_result",
    "command-next.control_result",
    "command-next.execute_result",
)


def examples(kind: str, valid: bool) -> list[Path]:
    return sorted((EXAMPLES / ("valid" if valid else "invalid") / kind).glob("*.json"))


def load(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    "path", [p for k in RESULT_KINDS for p in examples(k, True)], ids=lambda p: p.name
)
def test_valid_example_results_are_valid(contracts: Contracts, path: Path) -> None:
    body = load(path)
    _, errors = check_result(contracts, body["dispatcher_id"], path.read_bytes())
    assert errors == []
    assert schema_kind(body) == path.parent.name


@pytest.mark.parametrize(
    "path", [p for k in RESULT_KINDS for p in examples(k, False)], ids=lambda p: p.name
)
def test_invalid_example_results_are_flagged(contracts: Contracts, path: Path) -> None:
    body = load(path)
    _, errors = check_result(contracts, str(body.get("dispatcher_id")), path.read_bytes())
    assert errors


def test_result_of_another_dispatcher_is_flagged(contracts: Contracts) -> None:
    path = examples("command-next.execute_result", True)[0]
    _, errors = check_result(contracts, "00000000-0000-4000-8000-000000000000", path.read_bytes())
    assert any("dispatcher_id" in e for e in errors)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1]", "event_type"),
        (b'{"event_type": "call.progress"}', "event_type"),
        (b" " * (MAX_BODY_BYTES + 1), "bytes"),
    ],
)
def test_garbage_results_are_flagged_not_dropped(
    contracts: Contracts, raw: bytes, fragment: str
) -> None:
    _, errors = check_result(contracts, "d", raw)
    assert errors and fragment in errors[0]


def _control(action: str, status: str, state: str) -> dict[str, Any]:
    return {
        "event_id": "e",
        "event_type": "command.result",
        "payload": {
            "command_type": "task.control",
            "task_id": "t",
            "action": action,
            "status": status,
            "task_state": state,
        },
    }


@pytest.mark.parametrize(
    ("body", "stop_applied"),
    [
        (_control("stop", "applied", "stopped"), True),
        (_control("stop", "rejected", "running"), False),
        (_control("pause", "applied", "paused"), False),
        ({**_control("stop", "applied", "stopped"), "event_type": "call.result"}, False),
        ({"event_type": "command.result", "payload": {"command_type": "call.execute"}}, False),
        ("garbage", False),
    ],
)
def test_stopped_applied_receipt_detection(body: Any, stop_applied: bool) -> None:
    assert facts_of(body).is_stop_applied is stop_applied


def test_facts_of_call_result_and_execute_result() -> None:
    call = load(examples("call-result.call_result", True)[0])
    facts = facts_of(call)
    assert (facts.event_type, facts.outcome, facts.command_id) == (
        "call.result",
        call["payload"]["outcome"],
        call["payload"]["source_command_id"],
    )
    exe = facts_of(load(examples("command-next.execute_result", True)[0]))
    assert exe.command_type == "call.execute" and exe.status in ("accepted", "rejected")
    assert facts_of(None) == ResultFacts()


def test_parse_body() -> None:
    assert parse_body(b'{"a": 1}') == ({"a": 1}, None)
    assert parse_body(b"{")[0] is None
