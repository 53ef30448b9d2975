"""Control intake: persist before ACK, dead-letter what is invalid (D-MQ-4, D-MQ-5, D-CTL-1)."""

from __future__ import annotations

import json

import pytest

from agentcall.dispatcher.control.service import ControlSettle, parse_control
from agentcall.dispatcher.domain.control import ActiveCallPolicy, ControlAction
from agentcall.dispatcher.domain.states import Barrier
from tests.support.control_fakes import NOW, config, raw, rig


async def test_valid_control_is_persisted_and_admission_closed_before_ack_d_mq_4() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("paused"))
    settle = await r.service.handle(raw("pause"))
    # At the moment the caller may ACK, the job and the closed barrier are durable.
    assert settle is ControlSettle.ACK
    assert r.store.tasks["task-a"].barrier is Barrier.CLOSED and len(r.store.jobs) == 1
    await r.lanes.join()
    assert r.store.tasks["task-a"].barrier is Barrier.PAUSED


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "invalid_json"),
        (raw("pause").replace(b'"pause"', b'"purge"'), "schema_violation"),
        (
            json.dumps(
                {**json.loads(raw("stop")), "command_id": "c-1"}  # controls have no command_id
            ).encode(),
            "schema_violation",
        ),
        (
            raw("pause").replace(
                b"c046b893-8628-4589-ae50-619d049248a6", b"9b0a3d55-3a31-4c1e-9f3c-0d6f4a0d2c11"
            ),
            "wrong_dispatcher",
        ),
    ],
)
async def test_invalid_control_is_recorded_and_dead_lettered_d_mq_5(
    body: bytes, reason: str
) -> None:
    r = rig(task_a=Barrier.NONE)
    assert await r.service.handle(body) is ControlSettle.DEAD_LETTER
    assert r.store.rejected == [("mq:control", reason)]
    assert r.store.tasks["task-a"].barrier is Barrier.NONE and not r.store.jobs


def test_parse_control_reads_the_envelope_d_ctl_1() -> None:
    command = parse_control(raw("stop", task_id="task-z"))
    assert (command.task_id, command.action, command.active_call_policy) == (
        "task-z",
        ControlAction.STOP,
        ActiveCallPolicy.DRAIN,
    )
    assert parse_control(raw("resume")).active_call_policy is None


async def test_recover_requeues_open_jobs_in_delivery_order_d_ctl_1() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("paused"), config("running"))
    await r.store.receive(parse_control(raw("pause")), "event-1", NOW)
    await r.store.receive(parse_control(raw("resume")), "event-2", NOW)
    assert await r.service.recover() == 2
    await r.lanes.join()
    actions = [b["payload"]["action"] for b in r.store.outbox]  # type: ignore[index]
    assert actions == ["pause", "resume"]
    assert r.store.tasks["task-a"].barrier is Barrier.NONE


async def test_snapshot_counts() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("paused"))
    await r.service.handle(raw("pause"))
    await r.service.handle(b"[]")
    await r.lanes.join()
    snap = r.service.status()
    assert (snap["received"], snap["dead_lettered"]) == (1, 1)
