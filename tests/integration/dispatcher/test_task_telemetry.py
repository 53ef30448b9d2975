"""The task of each decided command and of each confirmed call.result reaches the telemetry
port, so the per-task counters (``dispatcher_task_commands_total``,
``dispatcher_task_calls_total``) can be graphed per campaign: the admission service on a real
SQLite file, the outbox relay through the real broker."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import aio_pika
import pytest

from agentcall.dispatcher.admission.service import AdmissionService
from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.mq.consumers import Delivery
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import RESULT_EXCHANGE
from agentcall.dispatcher.mq.publisher import OutboxRelay
from agentcall.dispatcher.mq.settle import ChannelAcks
from agentcall.dispatcher.saas.cache import TaskLookup
from agentcall.dispatcher.store import outbox
from agentcall.dispatcher.store.db import Database
from tests.support.services import amqp_url
from tests.support.telemetry import RecordedTelemetry

pytestmark = pytest.mark.integration
D = "c046b893-8628-4589-ae50-619d049248a6"
NOW = datetime(2026, 9, 21, 0, 0, 10, tzinfo=UTC)


def command(command_id: str, task_id: str) -> bytes:
    return json.dumps(
        {
            "schema_version": "command-next.v0.1-proposal",
            "dispatcher_id": D,
            "tenant_id": "tenant-a",
            "tenant_key": "tenant-a",
            "trace_id": "trace-1",
            "issued_at": "2026-09-21T00:00:00Z",
            "command_id": command_id,
            "command_type": "call.execute",
            "not_after": "2026-09-21T00:15:00Z",
            "payload": {"task_id": task_id, "callee": "15000000001"},
        }
    ).encode()


class Frames:
    async def basic_ack(self, delivery_tag: int, multiple: bool = False, wait: bool = True) -> None:
        pass

    async def basic_nack(
        self, delivery_tag: int, multiple: bool = False, requeue: bool = True, wait: bool = True
    ) -> None:
        pass


class NoConfig:
    """The config cache when the SaaS answers nothing (every valid command is rejected)."""

    async def sip(self) -> None:
        return None

    async def task(self, task_id: str, fresh: bool = False) -> TaskLookup:
        return TaskLookup(None, error="unavailable")

    async def quota(self, tenant_id: str, tenant_key: str) -> None:
        return None


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "state.sqlite")
    yield database
    await database.close()


async def test_each_decided_command_is_reported_with_its_task(db: Database) -> None:
    telemetry = RecordedTelemetry()
    service = AdmissionService(
        db,
        NoConfig(),  # type: ignore[arg-type]
        dispatcher_id=D,
        routing_key=f"d.{D}.out",
        clock=lambda: NOW,
        is_consuming=lambda task_id: True,
        on_accepted=lambda ids: None,
        on_outbox=lambda: None,
        telemetry=telemetry,
    )
    acks = ChannelAcks(Frames())  # type: ignore[arg-type]
    bodies = [command("c1", "camp-a"), b"[not json", command("c2", "camp-b"), command("c1", "x")]
    batch = []
    for tag, body in enumerate(bodies, start=1):
        acks.received(tag)
        batch.append(Delivery("camp-a", f"agent-call.d.{D}.task.camp-a.v3", body, tag, acks))
    await service.process(batch)
    # the invalid body has no task and no decision; the repeated command id is a duplicate
    assert telemetry.decisions == [
        ("camp-a", "rejected"),
        ("camp-b", "rejected"),
        ("x", "duplicate"),
    ]


def call_result(task_id: str, outcome: str) -> dict[str, object]:
    payload = {
        "task_id": task_id,
        "outcome": outcome,
        "reason_code": None,
        "recording": {"status": "not_created"},
    }
    return {"event_type": "call.result", "payload": payload}


@pytest.mark.rabbitmq
async def test_each_confirmed_call_result_is_reported_with_its_task(db: Database) -> None:
    route = f"d.{uuid.uuid4()}.out"
    connection = await aio_pika.connect(amqp_url())
    channel = await connection.channel()
    await channel.declare_exchange(RESULT_EXCHANGE, "topic", durable=True)
    queue = await channel.declare_queue(f"it.task-telemetry.{uuid.uuid4()}", auto_delete=True)
    await queue.bind(RESULT_EXCHANGE, route)
    telemetry = RecordedTelemetry()
    link = AmqpLink(amqp_url(), policy=ReconnectPolicy(0.05, 0.1))
    relay = OutboxRelay(db, link, batch=100, retry_s=0.1, clock=lambda: NOW, telemetry=telemetry)
    for n, (task, outcome) in enumerate([("camp-a", "answered"), ("camp-b", "busy")]):
        body = call_result(task, outcome)
        await db.write(
            outbox.enqueue,
            event_id=f"c-{n}",
            event_type="call.result",
            routing_key=route,
            body=body,
            now=NOW,
        )
    tasks = [asyncio.create_task(link.run()), asyncio.create_task(relay.run())]
    try:
        async with asyncio.timeout(10):
            while len(telemetry.results) < 2:
                await asyncio.sleep(0.05)
        reported = sorted(zip(telemetry.result_tasks, telemetry.results, strict=True))
        assert reported == [
            ("camp-a", ("answered", "none", "not_created")),
            ("camp-b", ("busy", "none", "not_created")),
        ]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await link.close()
        await connection.close()
