"""Task control end to end: mocksaas + real RabbitMQ + the D as a subprocess + a sim cell.

Each test names the rules it proves. The queue's state is observed through the broker
(passive declare), results through mocksaas, dials through the cell's originate log.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aio_pika
import pytest

from tests.acceptance.dispatcher.broker import message_count, originate_log
from tests.acceptance.dispatcher.harness import Cell, MockSaas, Scenario, execute_body, unique
from tests.support.services import amqp_url
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]

COMMAND_EXCHANGE = "agent-call.dispatchers.v3"
# One command per admission transaction, each re-reading task config and quota over HTTP:
# the D consumes slowly enough that a pause lands with a backlog and prefetch in flight.
SLOW = {
    "DISPATCHER_PREFETCH": "20",
    "DISPATCHER_INTAKE_BATCH": "1",
    "DISPATCHER_CONFIG_TTL_S": "0.001",
    "DISPATCHER_QUOTA_TTL_S": "0.001",
}
ROOMY = {"max_concurrent_calls": 1000}


# --- helpers ------------------------------------------------------------------------
def task_queue(s: Scenario, task_id: str) -> str:
    return f"agent-call.d.{s.d}.task.{task_id}.v3"


def publish_commands(s: Scenario, task_id: str, count: int) -> list[str]:
    """Publish ``count`` valid call.execute (no-answer callees of mocksaas's default
    whitelist, D-NOTE-6) as the SaaS would."""
    ids = [unique("cmd") for _ in range(count)]
    bodies = [
        execute_body(s.d, task_id, f"15000{n % 1000:06d}", command_id=ids[n]).encode()
        for n in range(count)
    ]
    route = f"d.{s.d}.task.{task_id}.in"

    async def main() -> None:
        connection = await aio_pika.connect(amqp_url())
        async with connection:
            # With confirms: a confirmed persistent message is in its queue, so the
            # callers can read the broker's message count right after (no race).
            channel = await connection.channel(publisher_confirms=True)
            exchange = await channel.get_exchange(COMMAND_EXCHANGE, ensure=False)
            for start in range(0, count, 1000):
                await asyncio.gather(
                    *(
                        exchange.publish(
                            aio_pika.Message(
                                body,
                                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                                content_type="application/json",
                            ),
                            route,
                            mandatory=True,
                        )
                        for body in bodies[start : start + 1000]
                    )
                )
            await channel.close()

    asyncio.run(main())
    return ids


def redelivered(queue: str) -> int:
    """How many queued messages carry the redelivered flag (looked at, then put back)."""

    async def main() -> int:
        connection = await aio_pika.connect(amqp_url())
        async with connection:
            channel = await connection.channel()
            declared = await channel.declare_queue(queue, passive=True)
            flagged = 0
            while (message := await declared.get(no_ack=False, fail=False)) is not None:
                flagged += int(message.redelivered)
            await channel.close()  # nothing ACKed: every message goes back in place
            return flagged

    return asyncio.run(main())


def control_binding(s: Scenario, bound: bool) -> None:
    """Unbind / rebind the D's control queue, as the SaaS operator could."""

    async def main() -> None:
        connection = await aio_pika.connect(amqp_url())
        async with connection:
            channel = await connection.channel()
            queue = await channel.declare_queue(f"agent-call.d.{s.d}.control.v3", passive=True)
            route = f"d.{s.d}.control.in"
            if bound:
                await queue.bind(COMMAND_EXCHANGE, route)
            else:
                await queue.unbind(COMMAND_EXCHANGE, route)

    asyncio.run(main())


def set_status(s: Scenario, task_id: str, status: str, policy: str = "drain") -> Any:
    body = {"status": status, "active_call_policy": policy}
    return s.saas.admin("POST", f"/dispatchers/{s.d}/tasks/{task_id}/status", body)


def control(s: Scenario, task_id: str, action: str, policy: str = "drain") -> Any:
    body: dict[str, Any] = {"action": action}
    if action != "resume":
        body["active_call_policy"] = policy
    return s.saas.admin("POST", f"/dispatchers/{s.d}/tasks/{task_id}/controls", body)


def receipts(s: Scenario, task_id: str) -> list[dict[str, Any]]:
    return s.results(command_type="task.control", task_id=task_id)


def wait_receipts(s: Scenario, task_id: str, count: int, timeout: float = 30) -> list[Any]:
    def enough() -> list[dict[str, Any]] | None:
        found = receipts(s, task_id)
        return found if len(found) >= count else None

    return list(wait_for(enough, timeout, f"{count} control receipts for {task_id}"))


def verdict(receipt: dict[str, Any]) -> tuple[str, str, str, str]:
    return receipt["action"], receipt["status"], receipt["reason_code"], receipt["task_state"]


def command_results(s: Scenario, task_id: str) -> list[dict[str, Any]]:
    """command.result of call.execute (one D identity per test: all are this task's)."""
    return s.results(command_type="call.execute")


def saas_task(s: Scenario, task_id: str) -> dict[str, Any]:
    return dict(s.saas.admin("GET", f"/dispatchers/{s.d}/tasks/{task_id}"))


def ready(s: Scenario, task_id: str, **env: str) -> None:
    s.sip(max_concurrent_calls=1000)
    s.task(task_id, **ROOMY)
    s.quota(max_concurrent_calls=1000)
    s.start(**env)
    wait_for(lambda: (s.task_row(task_id) or {}).get("consumer") == "consuming", 20, "consumer")


def pause_then(measure: Callable[[str], int | None], queue: str) -> int | None:
    """Measure after a pause: each broker poll opens a connection, and polling at the
    harness's 20 Hz would halve the broker's drain throughput."""
    time.sleep(0.25)
    return measure(queue)


def dialled(cell: Cell, call_ids: set[str]) -> int:
    return sum(1 for entry in originate_log(cell.data) if entry["call_id"] in call_ids)


# --- pause ----------------------------------------------------------------------------
def test_pause_with_200_queued_and_prefetch_in_flight_d_ctl_2(scenario: Scenario) -> None:
    """Barrier first, nothing dialled after it, unaccepted deliveries back in the queue."""
    s, task = scenario, "task-p"
    ready(s, task, **SLOW)
    ids = publish_commands(s, task, 200)
    wait_for(lambda: len(command_results(s, task)) >= 10, 20, "consumption under way")
    set_status(s, task, "paused")
    [pause] = wait_receipts(s, task, 1)
    assert verdict(pause) == ("pause", "applied", "applied", "paused")

    def settled() -> tuple[int, int] | None:
        answered, queued = len(command_results(s, task)), message_count(task_queue(s, task))
        return (answered, queued) if queued is not None and answered + queued == 200 else None

    answered, queued = wait_for(settled, 20, "results + queued == 200")
    assert 0 < queued < 200 and answered > 0
    # Prefetched-but-unaccepted deliveries were returned with nack(requeue), not dropped.
    assert redelivered(task_queue(s, task)) > 0
    assert message_count(task_queue(s, task)) == queued
    results = command_results(s, task)
    assert {r["command_id"] for r in results} <= set(ids)
    barrier_at = pause["body"]["occurred_at"]
    assert all(r["body"]["occurred_at"] <= barrier_at for r in results)
    accepted = {r["body"]["payload"]["execution_id"] for r in results if r["status"] == "accepted"}
    time.sleep(1.0)  # nothing more may be consumed or dialled while paused
    assert message_count(task_queue(s, task)) == queued
    assert len(command_results(s, task)) == answered
    assert dialled(s.cell, accepted) == len(accepted)
    row = s.task_row(task)
    assert row is not None and row["barrier"] == "paused" and row["consumer"] != "consuming"


def test_discovery_paused_then_running_without_resume_stays_paused_d_disc_7(
    scenario: Scenario,
) -> None:
    """Discovery closes at once (the pause control is held up on the way) and a later
    discovery ``running`` never reopens; only the MQ resume with a fresh GET ``running``
    consumes the same queue again."""
    s, task = scenario, "task-d"
    ready(s, task)
    control_binding(s, bound=False)  # controls are returned to the SaaS, which retries
    set_status(s, task, "paused")
    wait_for(lambda: (s.task_row(task) or {}).get("barrier") == "closed", 20, "closed")
    set_status(s, task, "running")
    wait_for(lambda: (s.task_row(task) or {}).get("status") == "running", 20, "discovery")
    ids = publish_commands(s, task, 5)
    time.sleep(1.0)
    assert message_count(task_queue(s, task)) == 5 and command_results(s, task) == []
    assert (s.task_row(task) or {}).get("barrier") == "closed"
    assert receipts(s, task) == []
    control_binding(s, bound=True)  # the held-up pause, then the resume, arrive
    pause, resume = wait_receipts(s, task, 2)
    assert verdict(pause) == ("pause", "rejected", "state_mismatch", "closed")
    assert verdict(resume) == ("resume", "applied", "applied", "running")
    done = s.wait_results(5, command_type="call.execute")
    assert {r["command_id"] for r in done} == set(ids)
    assert message_count(task_queue(s, task)) == 0


# --- stop -----------------------------------------------------------------------------
def test_stop_drains_10000_silently_and_survives_sigkill_mid_drain_d_ctl_4(
    scenario: Scenario,
) -> None:
    """Every queued command ACKed without any result, one receipt after the queue is
    empty, then the SaaS retires the queue and emits ``removed`` — across a SIGKILL."""
    s, task = scenario, "task-s"
    ready(s, task)
    set_status(s, task, "paused")
    wait_receipts(s, task, 1)
    publish_commands(s, task, 10_000)
    queue = task_queue(s, task)
    assert message_count(queue) == 10_000
    s.quota(max_concurrent_calls=0)  # quota 0 never blocks a drain
    set_status(s, task, "stopped", policy="drain")
    wait_for(lambda: (pause_then(message_count, queue) or 0) < 7_000, 60, "drain under way")
    s.fault(
        "config", resource="task", target=task, kind="unavailable", count=1000
    )  # nor lost config
    s.kill()
    time.sleep(0.5)  # the broker requeues what the dead connection had not ACKed
    left = message_count(queue)
    assert left is not None and 0 < left < 10_000, "the drain was not interrupted midway"
    s.start(wait_open=False)
    stop = wait_for(
        lambda: [r for r in receipts(s, task) if r["action"] == "stop"], 90, "stop receipt"
    )
    assert [verdict(r) for r in stop] == [("stop", "applied", "applied", "stopped")]
    assert stop[0]["deliveries"] == 1
    wait_for(lambda: saas_task(s, task).get("queue_state") == "retired", 20, "retired")
    wait_for(lambda: (s.task_row(task) or {}).get("barrier") == "removed", 20, "removed")
    assert command_results(s, task) == []
    assert s.results(event_type="call.result", task_id=task) == []
    drained = [json.loads(line) for line in s.log().splitlines() if '"control.drained"' in line]
    assert [int(line["acked"]) for line in drained] == [left]  # the rest, once, after restart
    s.clear_faults()


def test_resume_consumes_the_same_queue_and_old_commands_face_not_after_d_ctl_3(
    scenario: Scenario,
) -> None:
    s, task = scenario, "task-e"
    ready(s, task)
    set_status(s, task, "paused")
    wait_receipts(s, task, 1)
    short, long = unique("cmd"), unique("cmd")
    for command_id, ttl in ((short, 1), (long, 600)):
        s.raw(task, execute_body(s.d, task, "15000000010", command_id=command_id, not_after_s=ttl))
    wait_for(lambda: message_count(task_queue(s, task)) == 2, 10, "both queued")
    time.sleep(1.5)  # the first one expires while the task is paused
    set_status(s, task, "running")
    assert verdict(wait_receipts(s, task, 2)[1]) == ("resume", "applied", "applied", "running")
    done = {
        r["command_id"]: r["reason_code"] for r in s.wait_results(2, command_type="call.execute")
    }
    assert done == {short: "command_expired", long: "accepted"}


# --- races ------------------------------------------------------------------------------
def test_stop_arriving_while_pause_is_applied_d_ctl_1_d_ctl_4(scenario: Scenario) -> None:
    s, task = scenario, "task-r"
    ready(s, task, DISPATCHER_DISCOVERY_INTERVAL_S="30")
    set_status(s, task, "paused")
    set_status(s, task, "stopped")
    pause, stop = wait_receipts(s, task, 2)
    assert verdict(pause)[0:2] in (("pause", "applied"), ("pause", "rejected"))
    if verdict(pause)[1] == "rejected":
        assert verdict(pause)[2:] == ("state_mismatch", "closed")
    assert verdict(stop) == ("stop", "applied", "applied", "stopped")
    control(s, task, "resume")  # the SaaS may try; stopped is irreversible (D-CTL-3)
    third = wait_receipts(s, task, 3)[2]
    assert verdict(third) == ("resume", "rejected", "state_mismatch", "stopped")
    wait_for(lambda: saas_task(s, task).get("queue_state") == "retired", 20, "retired")


def test_control_while_the_task_get_fails_keeps_admission_closed_d_ctl_5(
    scenario: Scenario,
) -> None:
    s, task = scenario, "task-u"
    ready(s, task)
    s.fault("config", resource="task", target=task, kind="unavailable", count=50)
    set_status(s, task, "paused")
    [pause] = wait_receipts(s, task, 1)
    assert verdict(pause) == ("pause", "rejected", "task_unavailable", "closed")
    publish_commands(s, task, 3)
    time.sleep(1.0)
    assert message_count(task_queue(s, task)) == 3 and command_results(s, task) == []
    s.clear_faults()
    set_status(s, task, "running")
    resume = wait_receipts(s, task, 2)[1]
    assert verdict(resume) == ("resume", "applied", "applied", "running")
    s.wait_results(3, command_type="call.execute")


def test_out_of_order_controls_follow_the_authoritative_status_d_ctl_5(
    scenario: Scenario,
) -> None:
    """Controls that contradict the SaaS's current status are rejected and leave admission
    closed; each processing has its own receipt; a valid resume reopens."""
    s, task = scenario, "task-o"
    ready(s, task)
    steps = [
        (lambda: control(s, task, "pause"), ("pause", "rejected", "state_mismatch", "closed")),
        (lambda: control(s, task, "stop"), ("stop", "rejected", "state_mismatch", "closed")),
        (lambda: set_status(s, task, "paused"), ("pause", "applied", "applied", "paused")),
        (lambda: control(s, task, "resume"), ("resume", "rejected", "state_mismatch", "paused")),
        (lambda: set_status(s, task, "running"), ("resume", "applied", "applied", "running")),
    ]
    for n, (send, expected) in enumerate(steps, start=1):
        send()
        assert verdict(wait_receipts(s, task, n)[n - 1]) == expected
    assert len({r["event_id"] for r in receipts(s, task)}) == len(steps)


# --- active calls: hangup vs drain ------------------------------------------------------
LONG_CALLS = {
    "version": 1,
    "rules": [
        {
            "name": "long",
            "match": {"glob": "*7"},
            "outcome": "answered",
            "ring_ms": 100,
            "talk_ms": 600_000,
            "turns": [{"text": f"still here {n}", "at_ms": 1500 * n} for n in range(1, 300)],
            "recording": False,
        }
    ],
    "default": {"outcome": "no_answer", "ring_ms": 1000, "recording": False},
    "time_scale": 1.0,
}


@pytest.fixture(scope="module")
def long_cell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cell]:
    process = Cell(tmp_path_factory.mktemp("long-cell"), LONG_CALLS).start()
    yield process
    process.proc.stop()


@pytest.fixture
def long_scenario(saas: MockSaas, long_cell: Cell, tmp_path: Path) -> Iterator[Scenario]:
    s = Scenario(saas, long_cell, tmp_path)
    yield s
    if s.proc is not None and s.proc.alive:
        s.stop()


@pytest.mark.parametrize("policy", ["hangup", "drain"])
def test_active_calls_follow_the_policy_and_get_final_results_d_ctl_2(
    long_scenario: Scenario, policy: str
) -> None:
    s, task = long_scenario, f"task-{policy}"
    s.sip(max_concurrent_calls=1000)
    s.task(task, ring_timeout_ms=30_000, **ROOMY)
    s.quota(max_concurrent_calls=1000)
    s.start()
    s.calls(task, callees=["15000000017", "15000000027"])
    wait_for(
        lambda: len([c for c in s.cell.calls() if c.get("state") == "answered"]) >= 2,
        20,
        "two answered calls",
    )
    set_status(s, task, "paused", policy=policy)
    [pause] = wait_receipts(s, task, 1)
    assert verdict(pause) == ("pause", "applied", "applied", "paused")
    if policy == "hangup":
        finals = s.wait_results(2, timeout=20, event_type="call.result", task_id=task)
        assert {r["body"]["payload"]["reason_code"] for r in finals} == {"hangup_requested"}
        assert {r["outcome"] for r in finals} == {"answered"}
    else:
        time.sleep(2.0)
        assert s.results(event_type="call.result", task_id=task) == []  # calls go on
        assert len([c for c in s.cell.calls() if c.get("state") == "answered"]) >= 2
        set_status(s, task, "stopped", policy="hangup")  # stop with hangup ends them
        finals = s.wait_results(2, timeout=20, event_type="call.result", task_id=task)
        assert len(finals) == 2
