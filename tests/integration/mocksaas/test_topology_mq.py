"""The Mock SaaS owns the topology: exact names and arguments of mq-topology.json
(D-MQ-1, D-MQ-2, D-MQ-3, D-MQ-6), observed with a raw aio-pika client."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aio_pika
import aiormq
import pytest
from aio_pika.abc import AbstractRobustConnection

from agentcall.mocksaas.contracts import find_contracts_dir
from tests.integration.mocksaas.amqp_helpers import message_count, publish_result
from tests.integration.mocksaas.harness import Dispatcher, stop_applied
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
TOPOLOGY = json.loads((find_contracts_dir() / "mq-topology.json").read_text())


def render(template: str, d: str, task_id: str | None = None) -> str:
    out = template.replace("<dispatcher_id>", d)
    return out.replace("<task_id>", task_id) if task_id else out


async def redeclare_queue(
    conn: AbstractRobustConnection, name: str, spec: dict[str, Any], arguments: dict[str, Any]
) -> bool:
    """Non-passive redeclare: True when the broker accepts it (same arguments)."""
    channel = await conn.channel()
    try:
        await channel.declare_queue(
            name,
            durable=spec["durable"],
            exclusive=spec["exclusive"],
            auto_delete=spec["auto_delete"],
            arguments=arguments,
        )
        return True
    except aiormq.exceptions.ChannelPreconditionFailed:
        return False
    finally:
        if not channel.is_closed:
            await channel.close()


async def redeclare_exchange(
    conn: AbstractRobustConnection, spec: dict[str, Any], type_: str
) -> bool:
    channel = await conn.channel()
    try:
        await channel.declare_exchange(
            spec["name"],
            aio_pika.ExchangeType(type_),
            durable=spec["durable"],
            auto_delete=spec["auto_delete"],
            internal=spec["internal"],
        )
        return True
    except aiormq.exceptions.ChannelPreconditionFailed:
        return False
    finally:
        if not channel.is_closed:
            await channel.close()


async def assert_exact_queue(
    conn: AbstractRobustConnection, name: str, spec: dict[str, Any]
) -> None:
    assert await message_count(conn, name) is not None, f"{name} missing"
    assert await redeclare_queue(conn, name, spec, dict(spec["arguments"]))
    other = {**spec["arguments"], "x-dead-letter-exchange": "something-else"}
    assert not await redeclare_queue(conn, name, spec, other)
    if spec["arguments"]:
        assert not await redeclare_queue(conn, name, spec, {})


async def test_d_mq_1_2_topology_created_with_exact_names_and_arguments(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    d = dispatcher.id
    for ex in TOPOLOGY["exchanges"]:
        assert await redeclare_exchange(amqp, ex, ex["type"]), ex["name"]
        wrong = "direct" if ex["type"] != "direct" else "topic"
        assert not await redeclare_exchange(amqp, ex, wrong), ex["name"]
    queues = {q["role"]: q for q in TOPOLOGY["queues"]}
    for role in ("control", "result", "dead_letter"):
        await assert_exact_queue(amqp, render(queues[role]["name"], d), queues[role])
    task_id = dispatcher.put_task()["task_id"]
    await assert_exact_queue(amqp, render(queues["task"]["name"], d, task_id), queues["task"])
    assert dispatcher.topology["control_queue"] == render(queues["control"]["name"], d)
    assert dispatcher.topology["result_queue"] == render(queues["result"]["name"], d)


async def test_d_mq_1_bindings_route_every_key(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    d = dispatcher.id
    task_id = dispatcher.put_task()["task_id"]
    channel = await amqp.channel(publisher_confirms=True, on_return_raises=True)
    for b in TOPOLOGY["bindings"]:
        if b["publisher"] == "broker" or b["exchange"] == "agent-call.saas.v3":
            continue  # the result route is consumed by the server; checked elsewhere
        queue = render(b["queue"], d, task_id)
        before = await message_count(amqp, queue)
        exchange = await channel.get_exchange(b["exchange"], ensure=False)
        await exchange.publish(
            aio_pika.Message(b"probe"),
            mandatory=True,
            routing_key=render(b["routing_key"], d, task_id),
        )
        assert await message_count(amqp, queue) == (before or 0) + 1
    exchange = await channel.get_exchange("agent-call.dispatchers.v3", ensure=False)
    with pytest.raises(aio_pika.exceptions.DeliveryError):  # unbound route is returned
        await exchange.publish(
            aio_pika.Message(b"x"), mandatory=True, routing_key=f"d.{d}.task.never-created.in"
        )
    await channel.close()


async def test_d_mq_1_task_queue_declared_before_first_publish(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    task_id = f"t-{uuid.uuid4().hex[:8]}"
    queue = f"agent-call.d.{dispatcher.id}.task.{task_id}.v3"
    assert await message_count(amqp, queue) is None
    dispatcher.put_task(task_id)
    assert await message_count(amqp, queue) == 0
    out = dispatcher.admin("POST", f"/tasks/{task_id}/calls", {"count": 3})
    assert out["confirmed"] == 3 and out["pending"] == 0
    assert await message_count(amqp, queue) == 3


async def test_d_mq_6_at_most_256_unretired_task_queues(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    names = [f"q{i:03d}-{dispatcher.id[:6]}" for i in range(256)]
    with ThreadPoolExecutor(4) as pool:  # the server declares on a pool of channels
        ids = [t["task_id"] for t in pool.map(dispatcher.put_task, names)]
    out = dispatcher.admin(
        "PUT", "/tasks/one-too-many", {"tenant_id": "t", "tenant_key": "t"}, expect=409
    )
    assert out["error"]["code"] == "task_queue_limit"
    assert await message_count(amqp, f"agent-call.d.{dispatcher.id}.task.one-too-many.v3") is None
    dispatcher.set_status(ids[0], "stopped")
    dispatcher.admin(
        "PUT", "/tasks/one-too-many", {"tenant_id": "t", "tenant_key": "t"}, expect=409
    )  # stopped but not retired still counts
    await publish_result(amqp, dispatcher.id, stop_applied(dispatcher, ids[0]))
    wait_for(
        lambda: dispatcher.admin("GET", f"/tasks/{ids[0]}")["queue_state"] == "retired",
        what="retirement",
    )
    dispatcher.put_task("one-too-many")


async def test_d_disc_8_retirement_only_after_stopped_applied(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    """Contract §3.4: unbind + delete only after the D's receipt, then the tombstone."""
    task_id = dispatcher.put_task()["task_id"]
    queue = f"agent-call.d.{dispatcher.id}.task.{task_id}.v3"
    await publish_result(amqp, dispatcher.id, stop_applied(dispatcher, task_id))  # too early
    stopped = dispatcher.set_status(task_id, "stopped", active_call_policy="hangup")
    head = stopped["task"]["last_event_id"]
    # the early receipt is stored; the sweep retires once the SaaS status is stopped
    wait_for(
        lambda: dispatcher.admin("GET", f"/tasks/{task_id}")["queue_state"] == "retired",
        what="retirement by sweep",
    )
    task = dispatcher.admin("GET", f"/tasks/{task_id}")
    assert task["status"] == "removed" and task["removed_event_id"] == head + 1
    assert await message_count(amqp, queue) is None
    page = dispatcher.page(str(head)).json()
    assert page["tasks"] == [
        {
            "task_id": task_id,
            "tenant_id": "tenant-a",
            "tenant_key": "tenant-a",
            "status": "removed",
            "task_revision": task["task_revision"],
        }
    ]
    r = dispatcher.get(f"/task/{task_id}")
    assert r.status_code == 404


async def test_no_retirement_without_receipt(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    task_id = dispatcher.put_task()["task_id"]
    dispatcher.set_status(task_id, "stopped")
    other = dispatcher.put_task()["task_id"]
    rejected = {**stop_applied(dispatcher, other)}
    rejected["payload"] = {
        **rejected["payload"],
        "status": "rejected",
        "reason_code": "state_mismatch",
        "task_state": "running",
    }
    await publish_result(amqp, dispatcher.id, rejected)
    await publish_result(amqp, dispatcher.id, stop_applied(dispatcher, other))  # not stopped
    wait_for(
        lambda: dispatcher.admin("GET", "/results/summary")["deliveries"] == 2,
        what="results stored",
    )
    for t in (task_id, other):
        assert dispatcher.admin("GET", f"/tasks/{t}")["queue_state"] == "active"
        assert await message_count(amqp, f"agent-call.d.{dispatcher.id}.task.{t}.v3") == 0
