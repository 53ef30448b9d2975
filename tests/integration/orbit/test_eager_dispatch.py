"""Eager dispatch on real databases (worker-protocol.md §5 "Eager dispatch", O-SUB-1, O-SUB-4,
O-STATE-1): a task submitted while a connection of the server process can take it is leased in
its submit transaction — the same rows a lease round writes, at the same database time as the
acceptance — and its lease is sent after the commit; a transaction that fails leases nothing
and frees the reserved slot. Over the wire: a real server and a protocol-level worker."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.errors import Unavailable
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.execution.acks import Peer
from agentcall.orbit.execution.batch import Batcher
from agentcall.orbit.execution.eager import EagerDispatch
from agentcall.orbit.execution.hub import Hub, Link
from agentcall.orbit.execution.kernel import Kernel
from agentcall.orbit.execution.upkeep import Upkeep
from agentcall.orbit.protocol.messages import WorkerIdentity
from agentcall.orbit.store import journal
from agentcall.orbit.store.admin import Admin, Initialized
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import task_attempts, task_events, tasks
from agentcall.orbit.usecases.operations import Operations
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import RawWorker, get_task, in_seconds, ref, submit

pytestmark = pytest.mark.integration
H = HandlerKey("demo.work", "v1")


# ---- in process: the submit group with a real hub link --------------------------------------


class _Setup:
    def __init__(self, db: Database, made: Initialized, principal: Principal) -> None:
        self.db, self.made, self.principal = db, made, principal
        hub = Hub(cast(Batcher, None), cast(Kernel, None), cast(Upkeep, None), tick_s=1, sweep_s=1)
        self.sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            self.sent.append(message)

        worker = WorkerIdentity("w", "i" * 32, "sdk", "host", 1)
        peer = Peer("c" * 32, made.token_id, made.namespace_id, frozenset({made.queue_id}), worker)
        self.link = Link(peer, frozenset({H}), (made.queue_id,), 1, send)
        hub.add(self.link, set())
        self.link.pending = frozenset()  # as after a round that found its queue empty
        self.delivered: list[int] = []
        eager = EagerDispatch(hub, 15_000, self.delivered.append)
        self.ops = Operations(db, handoff=eager.claim)
        assert self.ops.groups is not None

    async def submit(self, **fields: str) -> Any:
        text = (
            f'{{"queue_id":"{self.made.queue_id}","handler":"demo.work",'
            f'"handler_version":"v1","payload_version":"v1","payload":{{"n":1}}'
            + "".join(f',"{k}":"{v}"' for k, v in fields.items())
            + "}"
        )
        request = parse_submit(read_json_text(text))
        return await self.ops.submit(self.principal, request, os.urandom(8).hex(), "0" * 32)


@pytest.fixture
async def setup(db: Database) -> _Setup:
    made = await Admin(db).init(f"eager-{datetime.now(UTC).timestamp()}", "q")
    return _Setup(db, made, await Operations(db).authenticate(made.token))


async def _rows(db: Database, table: sa.Table, task_id: str) -> list[Any]:
    column = table.c.id if table is tasks else table.c.task_id
    async with db.read() as conn:
        return list(await conn.execute(sa.select(table).where(column == task_id)))


async def test_eager_lease_is_written_with_the_acceptance(setup: _Setup) -> None:
    receipt = await setup.submit()
    assert receipt.status == 201 and receipt.leased
    task_id = json.loads(receipt.task_text)["id"]
    assert '"state":"WAITING"' in receipt.task_text and '"revision":"1"' in receipt.task_text
    (task,) = await _rows(setup.db, tasks, task_id)
    (attempt,) = await _rows(setup.db, task_attempts, task_id)
    events = sorted(await _rows(setup.db, task_events, task_id), key=lambda e: e.revision)
    assert (task.state, task.revision, task.lease_count) == ("LEASED", 2, 1)
    assert task.current_attempt_id == attempt.id and attempt.state == "LEASED"
    assert attempt.connection_id == setup.link.peer.connection_id and attempt.number == 1
    assert [(e.revision, e.kind, e.from_state, e.to_state) for e in events] == [
        (1, "ACCEPTED", None, "WAITING"),
        (2, "LEASED", "WAITING", "LEASED"),
    ]
    # one transaction, one database time
    assert attempt.leased_at == task.created_at == events[0].created_at == events[1].created_at
    await asyncio.sleep(0.05)  # the lease goes out after the commit
    assert [m["attempt"]["id"] for m in setup.sent] == [attempt.id]
    assert setup.link.in_flight == {attempt.id} and setup.delivered == [1]


async def test_eager_not_without_a_free_slot_nor_for_a_task_not_yet_ready(setup: _Setup) -> None:
    later = await setup.submit(available_at=in_seconds(60))
    assert not later.leased, "a task not yet available was leased"
    first = await setup.submit()
    second = await setup.submit()  # capacity 1: taken by the first
    assert first.leased and not second.leased
    second_id = json.loads(second.task_text)["id"]
    assert [row.state for row in await _rows(setup.db, tasks, second_id)] == ["WAITING"]
    assert await _rows(setup.db, task_attempts, second_id) == []


async def test_eager_a_failed_transaction_leases_nothing_and_frees_the_slot(
    setup: _Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = journal.acceptance_rows

    def refused_audit(*args: Any) -> list[Insert]:
        events, audits = original(*args)
        return [events, Insert(audits.table, [{**row, "token_id": None} for row in audits.rows])]

    monkeypatch.setattr(journal, "acceptance_rows", refused_audit)
    with pytest.raises(Unavailable):
        await setup.submit()
    monkeypatch.undo()
    await asyncio.sleep(0.05)
    assert setup.sent == [] and setup.link.in_flight == set() and setup.delivered == []
    async with setup.db.read() as conn:
        count = await conn.execute(
            sa.select(sa.func.count())
            .select_from(tasks)
            .where(tasks.c.queue_id == setup.made.queue_id)
        )
        assert count.scalar_one() == 0
    assert (await setup.submit()).leased, "the freed slot takes the next task"


# ---- over the wire ---------------------------------------------------------------------------


@pytest.fixture(scope="module", params=KINDS)
def eager_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    with fresh_url(request.param, tmp_path_factory.mktemp("orbit-eager"), migrated=True) as url:
        log = tmp_path_factory.mktemp("orbit-eager-server") / "server.log"
        with execution_server(url, log) as base:
            yield url, base


@pytest.fixture
async def wire(eager_url: tuple[str, str]) -> AsyncIterator[tuple[Tenant, httpx.AsyncClient]]:
    db_url, base = eager_url
    db = Database.open(db_url, pool_size=2)
    tenant = await Tenant.create(db, base)
    await db.close()
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        yield tenant, client


async def test_eager_an_idle_worker_runs_a_task_leased_with_its_submit(
    wire: tuple[Tenant, httpx.AsyncClient], tmp_path: Path
) -> None:
    tenant, http = wire
    worker, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        await asyncio.sleep(0.5)  # the connection's first round finds its queue empty
        task_id = await submit(http, tenant)
        lease = await worker.next("lease")
        assert lease["task"]["id"] == task_id
        task = await get_task(http, tenant, task_id)
        assert task["state"] == "LEASED" and task["revision"] == "2"
        started = await worker.request({"type": "started", **ref(lease)})
        assert started["ok"] and started["task_state"] == "RUNNING"
        done = await worker.request(
            {"type": "result", **ref(lease), "outcome": "succeeded", "result": {"ok": True}}
        )
        assert done["ok"] and done["task_state"] == "SUCCEEDED"
        leased_at = datetime.fromisoformat(lease["attempt"]["leased_at"].replace("Z", "+00:00"))
        created_at = datetime.fromisoformat(task["created_at"].replace("Z", "+00:00"))
        assert abs(leased_at - created_at) < timedelta(milliseconds=1)
        metrics = (await http.get("/metrics")).text
        assert "orbit_eager_leases_total 1.0" in metrics, "the eager lease was not counted"
    finally:
        await worker.close()
