"""The result consumer stores a batch of deliveries in one transaction and settles it only
then (D-MQ-2): one multiple ACK per channel at the batch's highest tag, or, when the store
fails, every delivery of the batch requeued and none ACKed. Driven with recorded messages
over a real SQLite file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentcall.mocksaas.amqp.broker import Broker
from agentcall.mocksaas.amqp.results import ResultConsumer
from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from agentcall.mocksaas.metrics import Metrics
from agentcall.mocksaas.store import results
from agentcall.mocksaas.store.db import Database
from agentcall.mocksaas.topology import Topology

pytestmark = pytest.mark.integration
D = "c046b893-8628-4589-ae50-619d049248a6"
EXAMPLE = sorted(
    (find_contracts_dir() / "examples" / "valid" / "call-result.call_result").glob("*.json")
)[0]


@dataclass
class Message:
    """What the consumer uses of an aio-pika delivery; its settlements are recorded."""

    body: bytes
    delivery_tag: int
    channel: object
    settled: list[tuple[str, Any]] = field(default_factory=list)
    redelivered: bool = False

    async def ack(self, multiple: bool = False) -> None:
        self.settled.append(("ack", multiple))

    async def nack(self, requeue: bool = True) -> None:
        self.settled.append(("nack", requeue))


def body(event_id: str) -> bytes:
    content = {**json.loads(EXAMPLE.read_text()), "dispatcher_id": D, "event_id": event_id}
    return json.dumps(content).encode()


@pytest.fixture
def consumer(tmp_path: Path) -> Any:
    db = Database(tmp_path / "saas.db")
    directory = find_contracts_dir()
    consumer = ResultConsumer(
        Broker("amqp://unused/"),
        db,
        Contracts(directory),
        Topology.load(directory),
        lambda: datetime(2026, 9, 21, tzinfo=UTC),
        lambda d, t: _never(),
        Metrics(),
    )
    yield consumer, db
    db.close()


async def _never() -> None:
    raise AssertionError("no stop receipt in these batches")


async def test_a_batch_is_stored_in_order_then_acked_once_per_channel(consumer: Any) -> None:
    results_consumer, db = consumer
    first, second = object(), object()
    batch = [
        Message(body("e1"), 1, first),
        Message(body("e2"), 7, second),
        Message(b"{not json", 2, first),
        Message(body("e3"), 3, first),
        Message(body("e4"), 9, second),
    ]
    await results_consumer.handle([(D, m) for m in batch])
    stored = await db.run(results.query, D, {}, 10)
    assert [r["event_id"] for r in stored] == ["e1", "e2", None, "e3", "e4"]
    assert [r["valid"] for r in stored] == [True, True, False, True, True]
    settled = {m.delivery_tag: m.settled for m in batch}
    assert settled == {1: [], 2: [], 3: [("ack", True)], 7: [], 9: [("ack", True)]}
    assert results_consumer.received == 5


async def test_a_batch_whose_store_fails_is_requeued_and_never_acked(consumer: Any) -> None:
    results_consumer, db = consumer
    channel = object()
    batch = [Message(body(f"e{tag}"), tag, channel) for tag in (1, 2, 3)]
    await db.run(lambda conn: conn.execute("DROP TABLE results"))
    await results_consumer.handle([(D, m) for m in batch])
    assert [m.settled for m in batch] == [[("nack", True)]] * 3
    assert results_consumer.received == 0
