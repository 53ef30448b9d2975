"""mq-topology.json against D-MQ-1, D-MQ-2, D-MQ-3, D-MQ-5 and D-MQ-6."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agentcall.dispatcher import contracts

TOPOLOGY: dict[str, Any] = json.loads((contracts.contracts_dir() / "mq-topology.json").read_text())
COMMON: dict[str, Any] = json.loads((contracts.contracts_dir() / "common.schema.json").read_text())
LONGEST_DID = "f" * 8 + "-ffff-4fff-bfff-" + "f" * 12
LONGEST_TASK = "T" * 128
DID = "c046b893-8628-4589-ae50-619d049248a6"


def _expand(template: str, dispatcher_id: str = DID, task_id: str = "task-a") -> str:
    return template.replace("<dispatcher_id>", dispatcher_id).replace("<task_id>", task_id)


def _queue(role: str) -> dict[str, Any]:
    return next(q for q in TOPOLOGY["queues"] if q["role"] == role)


def _exchange(name: str) -> dict[str, Any]:
    return next(e for e in TOPOLOGY["exchanges"] if e["name"] == name)


def _binding(queue_name: str) -> dict[str, Any]:
    return next(b for b in TOPOLOGY["bindings"] if b["queue"] == queue_name)


def test_d_mq_1_task_and_control_routes_and_queues() -> None:
    task, control = _queue("task"), _queue("control")
    assert _expand(task["name"]) == f"agent-call.d.{DID}.task.task-a.v3"
    assert _expand(_binding(task["name"])["routing_key"]) == f"d.{DID}.task.task-a.in"
    assert _expand(control["name"]) == f"agent-call.d.{DID}.control.v3"
    assert _expand(_binding(control["name"])["routing_key"]) == f"d.{DID}.control.in"
    for queue in (task, control):
        assert _binding(queue["name"])["exchange"] == "agent-call.dispatchers.v3"
        assert queue["consumer"] == "dispatcher"
    exchange = _exchange("agent-call.dispatchers.v3")
    assert (exchange["type"], exchange["durable"]) == ("topic", True)
    assert TOPOLOGY["dispatcher_declares"] is False and TOPOLOGY["owner"] == "saas"


def test_d_mq_2_one_result_route_carries_command_and_call_results() -> None:
    result = _queue("result")
    binding = _binding(result["name"])
    assert _expand(result["name"]) == f"agent-call.saas.d.{DID}.v3"
    assert (binding["exchange"], _expand(binding["routing_key"])) == (
        "agent-call.saas.v3",
        f"d.{DID}.out",
    )
    assert set(result["carries"]) == {
        "command-next.execute_result",
        "command-next.control_result",
        "call-result.call_result",
    }
    exchange = _exchange("agent-call.saas.v3")
    assert (exchange["type"], exchange["durable"]) == ("topic", True)


def test_d_mq_3_longest_names_match_the_stated_byte_limits() -> None:
    limits = TOPOLOGY["limits"]
    assert len(LONGEST_DID) == TOPOLOGY["placeholders"]["dispatcher_id"]["max_bytes"] == 36
    assert re.fullmatch(TOPOLOGY["placeholders"]["dispatcher_id"]["pattern"], LONGEST_DID)
    task_queue = _queue("task")["name"]
    longest = {
        "task_route": _expand(_binding(task_queue)["routing_key"], LONGEST_DID, LONGEST_TASK),
        "task_queue": _expand(task_queue, LONGEST_DID, LONGEST_TASK),
    }
    assert len(longest["task_route"].encode()) == limits["task_routing_key_max_bytes"] == 175
    assert len(longest["task_queue"].encode()) == limits["task_queue_name_max_bytes"] == 186
    for queue in TOPOLOGY["queues"]:
        name = _expand(queue["name"], LONGEST_DID, LONGEST_TASK)
        assert len(name.encode()) <= limits["queue_name_max_bytes"] == 255
    for binding in TOPOLOGY["bindings"]:
        key = _expand(binding["routing_key"], LONGEST_DID, LONGEST_TASK)
        assert len(key.encode()) <= limits["routing_key_max_bytes"] == 255


def test_d_mq_3_queues_durable_shared_and_without_ttl() -> None:
    forbidden = set(TOPOLOGY["forbidden_queue_arguments"])
    assert {"x-message-ttl", "x-expires"} <= forbidden
    for queue in TOPOLOGY["queues"]:
        assert (queue["durable"], queue["exclusive"], queue["auto_delete"]) == (True, False, False)
        assert not forbidden & set(queue["arguments"]), queue["name"]
    for exchange in TOPOLOGY["exchanges"]:
        assert (exchange["durable"], exchange["auto_delete"]) == (True, False)


def test_d_mq_3_messages_persistent_mandatory_confirmed_without_expiration() -> None:
    publish = TOPOLOGY["publish"]
    assert publish["delivery_mode"] == 2 and publish["persistent"] is True
    assert publish["mandatory"] is True and publish["publisher_confirms"] is True
    assert publish["expiration"] is None
    assert TOPOLOGY["limits"]["max_body_bytes"] == contracts.MAX_BODY_BYTES


def test_d_mq_5_business_queues_dead_letter_to_a_declared_exchange() -> None:
    dead = _queue("dead_letter")
    assert _binding(dead["name"])["exchange"] == dead["name"] == "agent-call.dead-letter.v3"
    for role in ("task", "control", "result"):
        dlx = _queue(role)["arguments"]["x-dead-letter-exchange"]
        assert _exchange(dlx)["direction"] == "dead_letter"
    assert TOPOLOGY["consume"]["invalid_body"] == "nack_requeue_false"


def test_d_mq_6_at_most_256_unretired_task_queues() -> None:
    assert TOPOLOGY["limits"]["max_unretired_task_queues_per_dispatcher"] == 256
    assert _queue("task")["scope"] == "per_task"


def test_d_id_1_topology_placeholders_share_the_schema_patterns() -> None:
    defs = COMMON["$defs"]
    assert TOPOLOGY["placeholders"]["dispatcher_id"]["pattern"] == defs["dispatcher_id"]["pattern"]
    assert TOPOLOGY["placeholders"]["task_id"]["pattern"] == defs["task_id"]["pattern"]


@pytest.mark.parametrize("binding", TOPOLOGY["bindings"], ids=lambda b: b["queue"])
def test_bindings_reference_declared_exchanges_and_queues(binding: dict[str, Any]) -> None:
    assert _exchange(binding["exchange"])
    assert binding["queue"] in {q["name"] for q in TOPOLOGY["queues"]}


def test_queues_carry_known_kinds() -> None:
    carried = {kind for queue in TOPOLOGY["queues"] for kind in queue["carries"]}
    assert carried <= set(contracts.kinds())
    assert carried == set(contracts.kinds()) - {
        "config-read.sip_config",
        "config-read.task_config",
        "config-read.tenant_quota",
        "config-read.error",
        "task-discovery.page",
        "task-discovery.error",
    }
