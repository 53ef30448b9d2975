"""The dialer with a batching cell port and coalesced event application, on real SQLite.

Every execution is marked ``dialing`` (durably) before its round is sent; each item's
answer is settled as a single originate's would be — dialled, refused (failed with one
call.result), unanswered (unknown, never redialled), dialled before (adopted) — and
nothing is ever sent twice, not even when the same executions are submitted again.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentcall.dispatcher.calls.service import CallSupervisor
from agentcall.dispatcher.calls.transaction import apply_batch
from agentcall.dispatcher.cell.adapter import event_detail
from agentcall.dispatcher.cell.fake import FakeBatchingCell
from agentcall.dispatcher.cell.port import (
    BatchingCell,
    CallIdTaken,
    CellCall,
    CellEvent,
    CellPlan,
    CellPortError,
    CellRejected,
    CellUnavailable,
)
from agentcall.dispatcher.domain.admission import Accept, decide
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.finalize.result import Finalizer
from agentcall.dispatcher.store import executions, outbox
from agentcall.dispatcher.store.db import Database
from tests.integration.dispatcher.rows import accept_execution
from tests.support import dispatcher_factories as f

from .test_crash_reconciler import NOW, cell_call

pytestmark = [pytest.mark.integration]


def by_suffix(plan: CellPlan) -> CellCall | CellPortError:
    """Answers per call_id suffix: ``-busy`` refused, ``-lost`` unanswered, ``-taken``."""
    call_id = plan.call_id
    if call_id.endswith("-busy"):
        return CellRejected("busy", "the cell runs its maximum")
    if call_id.endswith("-lost"):
        return CellUnavailable("originate: timed out")
    if call_id.endswith("-taken"):
        return CallIdTaken("already_dialled", "dialled before")
    return cell_call(call_id, "dialing", boot_id="boot-1")


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "d.sqlite")
    yield database
    await database.close()


def _accept(conn: Any, execution_id: str) -> None:
    command = f.command(command_id=f"command-{execution_id}")
    result = decide(command, f.view(), f.sip(), f.quota(), f.occupancy(), f.NOW)
    assert isinstance(result, Accept)
    accept_execution(
        conn,
        result.plan,
        execution_id=execution_id,
        call_id=execution_id,
        result_event_id=f"cmd-{execution_id}",
        call_result_event_id=f"call-result-{execution_id}",
        now=NOW,
    )


async def _dial(
    db: Database, cell: FakeBatchingCell, ids: list[str], expect_sent: int
) -> CallSupervisor:
    supervisor = CallSupervisor(
        db,
        cell,
        dispatcher_id=f.D_ID,
        routing_key="rk",
        clock=lambda: NOW,
        on_outbox=lambda: None,
    )
    supervisor.boot_id = "boot-1"
    supervisor.submit(ids)
    dialer = asyncio.create_task(supervisor._dialer())
    try:
        async with asyncio.timeout(10):
            while sum(map(len, cell.sent)) < expect_sent or supervisor._inflight:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
    finally:
        dialer.cancel()
        await asyncio.gather(dialer, return_exceptions=True)
    return supervisor


async def test_batch_originate_settles_each_item_and_never_redials(db: Database) -> None:
    ok = [f"exec-{i}" for i in range(150)]
    special = ["exec-a-busy", "exec-b-lost", "exec-c-taken"]
    for execution_id in ok + special:
        await db.write(_accept, execution_id)
    cell = FakeBatchingCell(answer=by_suffix)
    assert isinstance(cell, BatchingCell)
    supervisor = await _dial(db, cell, ok + special, len(ok) + len(special))
    assert len(cell.sent) >= 3, "sent in rounds, several requests"
    states = {e: (await db.read(executions.get, e)).state for e in ok + special}
    assert {states[e] for e in ok} == {S.DIALING}
    assert states["exec-a-busy"] is S.FINALIZED
    assert states["exec-b-lost"] is S.UNKNOWN
    # dialled before and no longer held by the cell: failed once, never dialled again
    assert states["exec-c-taken"] is S.FINALIZED
    rows = [r for r in await db.read(outbox.pending, 500) if r.event_type == "call.result"]
    reasons = sorted(json.loads(r.body)["payload"]["reason_code"] for r in rows)
    assert reasons == ["cell_already_dialled", "cell_busy"]
    assert supervisor.counts["originated"] == len(ok)
    # The same executions submitted again (e.g. a restart's re-scan): nothing is re-sent.
    await _dial(db, cell, ok + special, len(ok) + len(special))
    sent = Counter(c for round_ in cell.sent for c in round_)
    assert set(sent.values()) == {1}, "a call_id is sent to the cell at most once"


def _event(seq: int, type_: str, call_id: str, **data: Any) -> CellEvent:
    return CellEvent(seq, "boot-1", type_, call_id, NOW, event_detail(type_, data))


def _ended(seq: int, call_id: str) -> CellEvent:
    return _event(
        seq,
        "call.ended",
        call_id,
        outcome="no_answer",
        reason_code="ring_timeout",
        started_at=NOW.isoformat(),
        ended_at=NOW.isoformat(),
        recording_expected=False,
    )


async def test_coalesced_events_finalize_once_and_replays_change_nothing(db: Database) -> None:
    """Progress events superseded by an end in the same batch are skipped; the end still
    finalizes once (D-RES-1); a replayed batch is a no-op; a lone ringing still moves."""
    for execution_id in ("exec-x", "exec-y"):
        await db.write(_accept, execution_id)
        await db.write(executions.move, execution_id, S.DIALING, NOW, cell_boot_id="boot-1")
    kw = Finalizer(f.D_ID, "rk")
    batch = [
        _event(1, "call.dialing", "exec-x"),
        _event(2, "call.ringing", "exec-x"),
        _event(3, "call.ringing", "exec-y"),
        _ended(4, "exec-x"),
    ]
    assert await db.write(apply_batch, batch, {}, NOW, kw) == ["exec-x"]
    assert await db.write(apply_batch, batch, {}, NOW, kw) == []
    assert (await db.read(executions.get, "exec-x")).state is S.FINALIZED
    assert (await db.read(executions.get, "exec-y")).state is S.RINGING
    rows = [r for r in await db.read(outbox.pending, 500) if r.event_type == "call.result"]
    assert [r.event_id for r in rows] == ["call-result-exec-x"]


class HeldAcks(FakeBatchingCell):
    """A batching cell that answers an ack request only once ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.ack_requests: list[list[str]] = []

    async def ack_many(self, call_ids: Any) -> list[CellPortError | None]:
        self.ack_requests.append(list(call_ids))
        await self.release.wait()
        return await super().ack_many(call_ids)


async def test_finished_calls_are_acked_after_their_commit_without_holding_the_stream(
    db: Database,
) -> None:
    """The event stream goes on while the cell has not answered an ack: a later batch is
    applied meanwhile, its calls are acknowledged in the next request (the ones finalized
    while one is in flight share one), and each call once, only after its result is stored."""
    for execution_id in ("exec-a", "exec-b", "exec-c"):
        await db.write(_accept, execution_id)
        await db.write(executions.move, execution_id, S.DIALING, NOW, cell_boot_id="boot-1")
    cell = HeldAcks()
    supervisor = CallSupervisor(
        db, cell, dispatcher_id=f.D_ID, routing_key="rk", clock=lambda: NOW, on_outbox=lambda: None
    )
    acker = asyncio.create_task(supervisor._acker())
    try:
        async with asyncio.timeout(10):  # a guard against a stream that waits: never reached
            await supervisor._apply([_ended(1, "exec-a")])
            while not cell.ack_requests:
                await asyncio.sleep(0.01)
            await supervisor._apply([_ended(2, "exec-b")])  # the first ack is still held
            await supervisor._apply([_ended(3, "exec-c")])
            stored = {r.event_id for r in await db.read(outbox.pending, 50)}
            assert {"call-result-exec-b", "call-result-exec-c"} <= stored
            assert cell.acked == []
            cell.release.set()
            while len(cell.acked) < 3:
                await asyncio.sleep(0.01)
    finally:
        acker.cancel()
        await asyncio.gather(acker, return_exceptions=True)
    assert cell.ack_requests == [["exec-a"], ["exec-b", "exec-c"]]
    assert sorted(cell.acked) == ["exec-a", "exec-b", "exec-c"]
