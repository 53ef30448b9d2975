"""The result consumer stores every body, flags invalid ones and counts deliveries per
event_id (D-MQ-2, D-RES-1), observed through the admin API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aio_pika.abc import AbstractRobustConnection

from agentcall.mocksaas.contracts import find_contracts_dir
from tests.integration.mocksaas.amqp_helpers import publish_result
from tests.integration.mocksaas.harness import Dispatcher
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
VALID = find_contracts_dir() / "examples" / "valid"


def example(kind: str, d: Dispatcher, event_id: str) -> dict[str, Any]:
    path = sorted((VALID / kind).glob("*.json"))[0]
    body: dict[str, Any] = json.loads(Path(path).read_text())
    return {**body, "dispatcher_id": d.id, "event_id": event_id}


async def test_results_stored_validated_and_counted(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    d = dispatcher
    accepted = example("command-next.execute_result", d, "ev-acc")
    call = example("call-result.call_result", d, "ev-call")
    schema_bad = {**accepted, "event_id": "ev-bad", "unexpected": 1}
    foreign = example("command-next.execute_result", d, "ev-foreign")
    foreign["dispatcher_id"] = "00000000-0000-4000-8000-000000000000"
    for body in (accepted, accepted, accepted, call, schema_bad, foreign, b"{not json"):
        await publish_result(amqp, d.id, body)
    summary = wait_for(
        lambda: (s := d.admin("GET", "/results/summary"))["deliveries"] == 7 and s,
        what="7 stored results",
    )
    assert summary["distinct_events"] == 4
    assert summary["duplicates"] == {"ev-acc": 3}
    assert summary["invalid"] == 3
    assert summary["by_event_type"] == {"command.result": 3, "call.result": 1}
    assert summary["by_outcome"] == {call["payload"]["outcome"]: 1}
    assert summary["by_status"]["call.execute:" + accepted["payload"]["status"]] == 3

    invalid = d.admin("GET", "/results", params={"invalid": "1"})["results"]
    assert len(invalid) == 3
    by_event = {r["event_id"]: r for r in invalid}
    assert any("unexpected" in e for e in by_event["ev-bad"]["errors"])
    assert any("dispatcher_id" in e for e in by_event["ev-foreign"]["errors"])
    garbage = by_event[None]
    assert garbage["body"] is None and garbage["raw"] == "{not json"

    dup = d.admin("GET", "/results", params={"event_id": "ev-acc"})["results"]
    assert [r["deliveries"] for r in dup] == [3, 3, 3] and all(r["valid"] for r in dup)
    calls = d.admin("GET", "/results", params={"event_type": "call.result"})["results"]
    assert [r["body"] for r in calls] == [call]


def test_results_query_rejects_unknown_filters(dispatcher: Dispatcher) -> None:
    out = dispatcher.admin("GET", "/results", params={"colour": "red"}, expect=400)
    assert out["error"]["message"].startswith("colour")


async def test_metrics_count_stored_results(
    server: Any, dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    await publish_result(amqp, dispatcher.id, b"not json")
    wait_for(lambda: dispatcher.admin("GET", "/results/summary")["invalid"] == 1, what="stored")
    text = server.http.get("/metrics").text
    assert 'mocksaas_results_stored_total{valid="false"}' in text


async def test_execute_results_are_indexed_by_the_task_of_their_command(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    task_id = dispatcher.put_task()["task_id"]
    [command_id] = dispatcher.admin("POST", f"/tasks/{task_id}/calls", {})["command_ids"]
    body = example("command-next.execute_result", dispatcher, "ev-exec")
    body["payload"] = {**body["payload"], "command_id": command_id}
    body["aggregate_id"] = command_id
    await publish_result(amqp, dispatcher.id, body)
    found = wait_for(
        lambda: dispatcher.admin("GET", "/results", params={"task_id": task_id})["results"],
        what="indexed result",
    )
    assert [(r["command_id"], r["task_id"]) for r in found] == [(command_id, task_id)]
