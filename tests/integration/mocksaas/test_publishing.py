"""What the SaaS publishes: call.execute and task.control bodies, persistent + mandatory +
confirmed, status persisted before the control, retried with the same body (D-MQ-3,
D-CMD-1, D-CTL-1..4, contract §3)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import aio_pika
import pytest
from aio_pika.abc import AbstractRobustConnection

from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from tests.integration.mocksaas.amqp_helpers import drain, message_count
from tests.integration.mocksaas.harness import Dispatcher

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
CONTRACTS = Contracts(find_contracts_dir())


def task_queue(d: Dispatcher, task_id: str) -> str:
    return f"agent-call.d.{d.id}.task.{task_id}.v3"


async def test_d_cmd_1_call_execute_bodies(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    task_id = dispatcher.put_task(tenant_id="ten-1", tenant_key="key-1")["task_id"]
    out = dispatcher.admin(
        "POST", f"/tasks/{task_id}/calls", {"count": 5, "callee_start": 20, "not_after_s": 60}
    )
    messages = await drain(amqp, task_queue(dispatcher, task_id))
    assert len(messages) == 5
    bodies = [json.loads(m.body) for m in messages]
    for m, b in zip(messages, bodies, strict=True):
        assert m.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
        assert m.content_type == "application/json"
        assert CONTRACTS.violations("command-next.call_execute", b) == []
        assert (b["dispatcher_id"], b["tenant_id"], b["tenant_key"]) == (
            dispatcher.id,
            "ten-1",
            "key-1",
        )
        delta = datetime.fromisoformat(b["not_after"]) - datetime.fromisoformat(b["issued_at"])
        assert delta == timedelta(seconds=60)
    assert [b["payload"]["callee"] for b in bodies] == [f"150000000{n}" for n in range(20, 25)]
    assert [b["command_id"] for b in bodies] == out["command_ids"]


async def test_d_cmd_1_explicit_command_id_publishes_duplicates(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    task_id = dispatcher.put_task()["task_id"]
    for _ in range(2):
        dispatcher.admin(
            "POST",
            f"/tasks/{task_id}/calls",
            {"command_id": "cmd-dup", "callees": ["15000000009"], "not_after_s": -30},
        )
    bodies = [json.loads(m.body) for m in await drain(amqp, task_queue(dispatcher, task_id))]
    assert [b["command_id"] for b in bodies] == ["cmd-dup", "cmd-dup"]
    assert datetime.fromisoformat(bodies[0]["not_after"]) < datetime.now(UTC)


def test_calls_refused_for_stopped_or_finished_task(dispatcher: Dispatcher) -> None:
    a = dispatcher.put_task()["task_id"]
    b = dispatcher.put_task()["task_id"]
    dispatcher.set_status(a, "stopped")
    dispatcher.set_status(b, "finished")
    for t in (a, b):
        out = dispatcher.admin("POST", f"/tasks/{t}/calls", {}, expect=409)
        assert out["error"]["code"] == "task_not_publishable"
    paused = dispatcher.put_task(status="paused")["task_id"]
    assert dispatcher.admin("POST", f"/tasks/{paused}/calls", {})["confirmed"] == 1


@pytest.mark.parametrize(
    ("steps", "actions"),
    [
        (
            [("paused", "drain"), ("running", None), ("stopped", "hangup")],
            [("pause", "drain"), ("resume", None), ("stop", "hangup")],
        ),
        ([("finished", None), ("stopped", "drain")], [("stop", "drain")]),
        ([("paused", "hangup"), ("paused", "hangup")], [("pause", "hangup")] * 2),
    ],
)
async def test_d_ctl_status_change_persists_then_publishes_matching_control(
    dispatcher: Dispatcher,
    amqp: AbstractRobustConnection,
    steps: list[tuple[str, str | None]],
    actions: list[tuple[str, str | None]],
) -> None:
    task_id = dispatcher.put_task()["task_id"]
    control_queue = dispatcher.topology["control_queue"]
    for status, policy in steps:
        body = {"active_call_policy": policy} if policy else {}
        out = dispatcher.set_status(task_id, status, **body)
        # persisted first: by the time the control is in the queue the GET says so
        assert dispatcher.get(f"/task/{task_id}").json()["status"] == status
        assert out["control"] is None or out["control"]["state"] == "confirmed"
    bodies = [json.loads(m.body) for m in await drain(amqp, control_queue)]
    for b in bodies:
        assert CONTRACTS.violations("command-next.task_control", b) == []
    got = [(b["payload"]["action"], b["payload"].get("active_call_policy")) for b in bodies]
    assert got == actions


def test_d_ctl_4_illegal_status_changes_rejected(dispatcher: Dispatcher) -> None:
    task_id = dispatcher.put_task()["task_id"]
    dispatcher.set_status(task_id, "stopped")
    for status in ("running", "paused", "finished"):
        out = dispatcher.admin("POST", f"/tasks/{task_id}/status", {"status": status}, expect=409)
        assert out["error"]["code"] == "illegal_transition"
    dispatcher.admin("POST", f"/tasks/{task_id}/status", {"status": "removed"}, expect=400)


async def test_d_ctl_5_explicit_control_without_status_change(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    task_id = dispatcher.put_task()["task_id"]
    dispatcher.admin("POST", f"/tasks/{task_id}/controls", {"action": "pause"})
    assert dispatcher.admin("GET", f"/tasks/{task_id}")["status"] == "running"
    [msg] = await drain(amqp, dispatcher.topology["control_queue"])
    assert json.loads(msg.body)["payload"]["action"] == "pause"


async def test_d_mq_3_unroutable_publish_is_retried_with_the_same_body(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    task_id = dispatcher.put_task()["task_id"]
    queue = task_queue(dispatcher, task_id)
    channel = await amqp.channel()
    await channel.queue_delete(queue)  # behind the Mock SaaS's back: the route is unbound
    out = dispatcher.admin("POST", f"/tasks/{task_id}/calls", {"count": 2})
    assert out == {**out, "confirmed": 0, "pending": 2}
    q = await channel.declare_queue(
        queue, durable=True, arguments={"x-dead-letter-exchange": "agent-call.dead-letter.v3"}
    )
    await q.bind("agent-call.dispatchers.v3", f"d.{dispatcher.id}.task.{task_id}.in")
    for _ in range(100):  # the relay retries every second
        if await message_count(amqp, queue) == 2:
            break
        await asyncio.sleep(0.1)
    bodies = [json.loads(m.body) for m in await drain(amqp, queue)]
    assert sorted(b["command_id"] for b in bodies) == sorted(out["command_ids"])
    await channel.close()
