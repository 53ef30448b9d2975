"""A call's outcome, reason and final recording status are counted once, when the broker
confirms its call.result; an unroutable result stays pending, uncounted, and the outbox's
oldest pending row is what the backlog-age gauge shows (real broker, real SQLite file)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import aio_pika
import pytest

from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import RESULT_EXCHANGE
from agentcall.dispatcher.mq.publisher import OutboxRelay
from agentcall.dispatcher.store import outbox
from agentcall.dispatcher.store.db import Database
from tests.support.services import amqp_url
from tests.support.telemetry import RecordedTelemetry

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
NOW = datetime(2026, 9, 21, tzinfo=UTC)


def call_result(outcome: str, reason: str | None, recording: str) -> dict[str, object]:
    payload = {"outcome": outcome, "reason_code": reason, "recording": {"status": recording}}
    return {"event_type": "call.result", "payload": payload}


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "state.sqlite")
    yield database
    await database.close()


async def enqueue(
    db: Database, route: str, event_id: str, kind: str, body: dict[str, object], at: datetime = NOW
) -> None:
    await db.write(
        outbox.enqueue, event_id=event_id, event_type=kind, routing_key=route, body=body, now=at
    )


async def test_confirmed_call_results_are_counted_once_by_outcome_and_recording(
    db: Database,
) -> None:
    route = f"d.{uuid.uuid4()}.out"
    connection = await aio_pika.connect(amqp_url())
    channel = await connection.channel()
    await channel.declare_exchange(RESULT_EXCHANGE, "topic", durable=True)
    queue = await channel.declare_queue(f"it.telemetry.{uuid.uuid4()}", auto_delete=True)
    telemetry = RecordedTelemetry()
    link = AmqpLink(amqp_url(), policy=ReconnectPolicy(0.05, 0.1))
    relay = OutboxRelay(db, link, batch=100, retry_s=0.1, clock=lambda: NOW, telemetry=telemetry)
    await enqueue(
        db,
        route,
        "c-1",
        "call.result",
        call_result("busy", None, "not_created"),
        at=datetime(2026, 9, 20, 23, 59, tzinfo=UTC),
    )
    await enqueue(db, route, "c-2", "call.result", call_result("answered", "opt_out", "uploaded"))
    await enqueue(db, route, "r-1", "command.result", {"status": "accepted"})
    tasks = [asyncio.create_task(link.run()), asyncio.create_task(relay.run())]
    try:
        async with asyncio.timeout(10):
            while relay.failures < 3:
                await asyncio.sleep(0.05)
        assert telemetry.results == [], "unroutable: pending, not counted"
        oldest = await db.read(outbox.oldest_pending)
        assert oldest == datetime(2026, 9, 20, 23, 59, tzinfo=UTC)
        await queue.bind(RESULT_EXCHANGE, route)
        async with asyncio.timeout(10):
            while (await db.read(outbox.counts))["pending"]:
                await asyncio.sleep(0.05)
        assert sorted(telemetry.results) == [
            ("answered", "opt_out", "uploaded"),
            ("busy", "none", "not_created"),
        ]
        assert await db.read(outbox.oldest_pending) is None
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await link.close()
        await connection.close()
