"""No body on a queue can stop the Dispatcher (D-MQ-5): the intake's decode, decision
transaction and settling on a real state database, and the control queue's intake.

Every body that is not a valid command — any depth, any bytes, any encoding, huge
numbers, NaN, duplicate keys, lone surrogates, dates beyond the datetime range — is
recorded redacted and dead-lettered, and the commands batched with it are decided as
usual. The whole-process version (a real D, a real broker) is in
``tests/acceptance/dispatcher/test_hostile_input.py``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcall.dispatcher.admission.service import AdmissionService, classify
from agentcall.dispatcher.admission.transaction import Invalid, Valid
from agentcall.dispatcher.control.service import ControlSettle
from agentcall.dispatcher.domain.states import Barrier
from agentcall.dispatcher.mq.consumers import Delivery
from agentcall.dispatcher.mq.intake import Intake
from agentcall.dispatcher.mq.settle import ChannelAcks
from agentcall.dispatcher.saas.cache import TaskLookup
from agentcall.dispatcher.store import rejected
from agentcall.dispatcher.store.db import Database
from tests.support.control_fakes import raw as control_raw
from tests.support.control_fakes import rig
from tests.support.fuzzing import FUZZ, FUZZ_EXAMPLES
from tests.support.hostile import hostile_bodies, mutated

pytestmark = pytest.mark.integration

D = "c046b893-8628-4589-ae50-619d049248a6"
NOW = datetime(2026, 9, 21, 0, 0, 10, tzinfo=UTC)
QUEUE = f"agent-call.d.{D}.task.task-a.v3"
VALID = {
    "schema_version": "command-next.v0.1-proposal",
    "dispatcher_id": D,
    "tenant_id": "tenant-a",
    "tenant_key": "tenant-a",
    "trace_id": "trace-1",
    "issued_at": "2026-09-21T00:00:00Z",
    "command_id": "cmd-1",
    "command_type": "call.execute",
    "not_after": "2026-09-21T00:15:00Z",
    "payload": {"task_id": "task-a", "callee": "15000000001"},
}
POISON = [
    b"[" * 5000 + b"]" * 5000,  # the 10 KB body that stopped the D
    b'{"a":' * 100_000,
    b"[" * 900 + b"]" * 900,  # deep but parseable: refused by the schema
    b"\xff\xfe\x00",
    b'{"a": NaN}',
    b"1" * 5000,
    b"[1e999]",
    json.dumps({**VALID, "tenant_id": "\ud800"}).encode(),  # schema-valid, not UTF-8-storable
    json.dumps({**VALID, "issued_at": "0001-01-01T00:00:00+23:59"}).encode(),  # beyond UTC
    json.dumps(VALID).encode()[:-1] + b', "command_id": "cmd-2"}',  # a duplicate key
    json.dumps(VALID).encode("utf-16"),
]


class Frames:
    """An aiormq channel that records the settle frames sent to it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, bool]] = []

    async def basic_ack(self, delivery_tag: int, multiple: bool = False, wait: bool = True) -> None:
        self.sent.append(("ack", delivery_tag, multiple))

    async def basic_nack(
        self, delivery_tag: int, multiple: bool = False, requeue: bool = True, wait: bool = True
    ) -> None:
        self.sent.append(("requeue" if requeue else "dead_letter", delivery_tag, False))

    def fate(self, tag: int) -> str:
        for kind, sent, multiple in self.sent:
            if sent == tag or (kind == "ack" and multiple and tag <= sent):
                return kind
        return "unsettled"


class NoConfig:
    """The config cache when the SaaS answers nothing (every valid command is rejected)."""

    async def sip(self) -> None:
        return None

    async def task(self, task_id: str, fresh: bool = False) -> TaskLookup:
        return TaskLookup(None, error="unavailable")

    async def quota(self, tenant_id: str, tenant_key: str) -> None:
        return None


class Rig:
    """The admission service on a real SQLite file, run one batch at a time."""

    def __init__(self, path: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.db = self.loop.run_until_complete(Database.open(path))
        self.channel = Frames()
        self.acks = ChannelAcks(self.channel)
        self.tag = 0
        self.service = AdmissionService(
            self.db,
            NoConfig(),  # type: ignore[arg-type]
            dispatcher_id=D,
            routing_key=f"d.{D}.out",
            clock=lambda: NOW,
            is_consuming=lambda task_id: True,
            on_accepted=lambda ids: None,
            on_outbox=lambda: None,
        )

    def deliveries(self, bodies: list[bytes]) -> list[Delivery]:
        out = []
        for body in bodies:
            self.tag += 1
            self.acks.received(self.tag)
            out.append(Delivery("task-a", QUEUE, body, self.tag, self.acks))
        return out

    def process(self, bodies: list[bytes]) -> list[str]:
        """Run one batch through a real intake; the fate of each delivery."""
        batch = self.deliveries(bodies)
        intake = Intake(self.service.process, len(batch), quarantine=self.service.quarantine)

        async def once() -> None:
            await asyncio.wait_for(intake.handle(batch), 30)

        self.loop.run_until_complete(once())
        return [self.channel.fate(d.tag) for d in batch]

    def rejected(self) -> int:
        return int(self.loop.run_until_complete(self.db.read(rejected.count)))

    def close(self) -> None:
        self.loop.run_until_complete(self.db.close())
        self.loop.close()


@pytest.fixture
def admission(tmp_path: Path) -> Iterator[Rig]:
    r = Rig(tmp_path / "state.sqlite")
    yield r
    r.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """One database for every generated example (opening one per example is the cost)."""
    r = Rig(tmp_path_factory.mktemp("fuzz") / "state.sqlite")
    yield r
    r.close()


def test_poison_bodies_are_dead_lettered_and_the_batch_goes_on_d_mq_5(admission: Rig) -> None:
    """Finding: 5,000 nested ``[`` raised RecursionError in the intake and stopped the D."""
    valid = json.dumps(VALID).encode()
    fates = admission.process([*POISON, valid])
    assert fates == ["dead_letter"] * len(POISON) + ["ack"]
    assert admission.rejected() == len(POISON)
    assert admission.service.counts["dead_lettered"] == len(POISON)
    decided = {k: n for k, n in admission.service.counts.items() if k.startswith("rejected:")}
    assert sum(decided.values()) == 1, admission.service.counts  # decided as usual


def test_a_delivery_that_fails_alone_is_quarantined_not_the_batch_d_mq_5(admission: Rig) -> None:
    """A failure behind the decoder (here: a bug injected into the decision) costs only
    the delivery that causes it; a database failure still stops the intake."""
    real = admission.service.process

    async def faulty(batch: list[Delivery]) -> None:
        if any(b"boom" in d.body for d in batch):
            raise ValueError("injected")
        await real(batch)

    admission.service.process = faulty  # type: ignore[method-assign]
    fates = admission.process([json.dumps(VALID).encode(), b"boom", json.dumps(VALID).encode()])
    assert fates == ["ack", "dead_letter", "ack"]
    assert admission.rejected() == 1

    async def broken(batch: list[Delivery]) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    admission.service.process = broken  # type: ignore[method-assign]
    with pytest.raises(sqlite3.OperationalError):
        admission.process([b"{}"])


@pytest.mark.fuzz
@pytest.mark.timeout(max(120, FUZZ_EXAMPLES // 5))
@FUZZ
@given(bodies=st.lists(hostile_bodies(), min_size=1, max_size=4))
def test_fuzz_call_execute_intake_dead_letters_every_hostile_body_d_mq_5(
    shared: Rig, bodies: list[bytes]
) -> None:
    before = shared.rejected()
    assert shared.process(bodies) == ["dead_letter"] * len(bodies)
    assert shared.rejected() == before + len(bodies)


@pytest.mark.fuzz
@pytest.mark.timeout(max(120, FUZZ_EXAMPLES // 5))
@FUZZ
@given(body=mutated(VALID))
def test_fuzz_call_execute_behind_the_schema_never_raises_d_mq_5(shared: Rig, body: bytes) -> None:
    item = classify(Delivery("task-a", QUEUE, body, 1, ChannelAcks(Frames())))
    assert isinstance(item, Invalid | Valid)
    [fate] = shared.process([body])
    assert fate == ("ack" if isinstance(item, Valid) else "dead_letter")


@pytest.mark.fuzz
@pytest.mark.timeout(max(120, FUZZ_EXAMPLES // 5))
@FUZZ
@given(body=hostile_bodies() | mutated(json.loads(control_raw("pause"))))
def test_fuzz_task_control_intake_never_raises_d_mq_5(body: bytes) -> None:
    r = rig(task_a=Barrier.NONE)
    settle = asyncio.run(r.service.handle(body))
    assert settle in (ControlSettle.ACK, ControlSettle.DEAD_LETTER)
    if settle is ControlSettle.DEAD_LETTER:
        assert len(r.store.rejected) == 1 and not r.store.jobs
