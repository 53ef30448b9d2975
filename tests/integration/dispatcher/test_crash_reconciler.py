"""The reconciler on a real SQLite file with a fake cell behind the CellPort (crash rule).

Each test puts executions in the state a crash leaves them in, lets the cell answer,
and checks what one reconciliation round does: follow, finalize once with its reason,
hold (occupancy kept), open the recording of an orphan — never dial.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentcall.dispatcher.calls.recovery import Reconciler
from agentcall.dispatcher.cell.fake import FakeCell
from agentcall.dispatcher.cell.port import CellCall, CellOrphan
from agentcall.dispatcher.domain.admission import Accept, decide
from agentcall.dispatcher.domain.recording import RecordingState
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.finalize.result import Finalizer
from agentcall.dispatcher.recording.transaction import Opener
from agentcall.dispatcher.store import executions, outbox
from agentcall.dispatcher.store import recordings as recording_store
from agentcall.dispatcher.store.db import Database
from tests.integration.dispatcher.rows import accept_execution
from tests.support import dispatcher_factories as f

pytestmark = [pytest.mark.integration]

OLD, NEW = "boot-old", "boot-new"
NOW = datetime.now(UTC)
MEDIA = {
    "format": "wav",
    "channels": 1,
    "sample_rate_hz": 8000,
    "duration_ms": 5000,
    "size_bytes": 80044,
    "checksum_sha256": "c" * 64,
    "partial": False,
}


def cell_call(call_id: str, state: str, **kw: Any) -> CellCall:
    base: dict[str, Any] = {
        "call_id": call_id,
        "boot_id": NEW,
        "state": state,
        "started_at": NOW - timedelta(seconds=20),
        "ended_at": NOW if state == "ended" else None,
        "outcome": "answered" if state == "ended" else None,
        "reason_code": None,
        "transcript": (),
        "opt_out": False,
        "recording_expected": False,
        "recording": None,
    }
    return CellCall(**(base | kw))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "d.sqlite")
    yield database
    await database.close()


def _insert(conn: Any, n: int, state: S, boot: str, dialled_s_ago: float) -> None:
    command = f.command(command_id=f"command-{n}")
    result = decide(command, f.view(), f.sip(), f.quota(), f.occupancy(), f.NOW)
    assert isinstance(result, Accept)
    at = NOW - timedelta(seconds=dialled_s_ago)
    accept_execution(
        conn,
        result.plan,
        execution_id=f"exec-{n}",
        call_id=f"exec-{n}",
        result_event_id=f"cmd-result-{n}",
        call_result_event_id=f"call-result-{n}",
        now=at,
    )
    executions.move(conn, f"exec-{n}", S.DIALING, at, cell_boot_id=boot)
    if state is not S.DIALING:
        executions.move(conn, f"exec-{n}", state, at)


async def given(db: Database, *rows: tuple[int, S, str, float]) -> None:
    for row in rows:
        await db.write(_insert, *row)


def reconciler(db: Database, cell: FakeCell, open_recording: Opener | None = None) -> Reconciler:
    finalizer = Finalizer(f.D_ID, "rk", open_recording)
    return Reconciler(db, cell, clock=lambda: NOW, finalizer=finalizer, grace_s=5)


async def result_of(db: Database, n: int) -> dict[str, Any]:
    rows = [r for r in await db.read(outbox.pending, 100) if r.event_id == f"call-result-{n}"]
    assert len(rows) == 1, "D-RES-1: exactly one call.result"
    payload: dict[str, Any] = json.loads(rows[0].body)["payload"]
    return payload


async def state(db: Database, n: int) -> S:
    return (await db.read(executions.get, f"exec-{n}")).state


async def test_restarted_cell_lost_calls_end_cell_restarted_even_with_a_stale_boot(
    db: Database,
) -> None:
    """The cell runs a new boot and knows none of them: failed / cell_restarted, once."""
    await given(db, (1, S.IN_CALL, OLD, 30), (2, S.UNKNOWN, OLD, 30))
    cell = FakeCell([NEW])
    round_ = await reconciler(db, cell).reconcile()
    assert sorted(round_.finalized) == ["exec-1", "exec-2"]
    for n in (1, 2):
        payload = await result_of(db, n)
        assert (payload["outcome"], payload["reason_code"]) == ("failed", "cell_restarted")
        assert payload["recording"]["status"] == "not_created"
    again = await reconciler(db, cell).reconcile()
    assert again.finalized == [] and cell.originated == []  # once; never redialled


async def test_cell_restarting_during_the_round_decides_nothing(db: Database) -> None:
    await given(db, (1, S.IN_CALL, OLD, 30))
    round_ = await reconciler(db, FakeCell([OLD, NEW])).reconcile()
    assert round_.finalized == [] and await state(db, 1) is S.IN_CALL


async def test_same_boot_unknown_call_is_held_then_ended_after_the_grace(db: Database) -> None:
    """D-CMD-4: held as unknown (occupancy kept) while an originate may be in flight."""
    await given(db, (1, S.UNKNOWN, NEW, 1), (2, S.UNKNOWN, NEW, 60))
    round_ = await reconciler(db, FakeCell([NEW])).reconcile()
    assert round_.held == 1 and round_.finalized == ["exec-2"]
    assert await state(db, 1) is S.UNKNOWN
    assert (await db.read(executions.occupancy)).view("tenant-1", "task-a").task == 1
    assert (await result_of(db, 2))["reason_code"] == "cell_has_no_call"


async def test_live_call_is_followed_and_ended_one_finalized_with_its_facts(
    db: Database,
) -> None:
    await given(db, (1, S.UNKNOWN, NEW, 30), (2, S.UNKNOWN, NEW, 30), (3, S.DIALING, NEW, 30))
    ended = cell_call("exec-2", "ended", opt_out=True, reason_code="opt_out")
    cell = FakeCell([NEW], [cell_call("exec-1", "answered"), ended, cell_call("exec-3", "ringing")])
    round_ = await reconciler(db, cell).reconcile()
    assert round_.finalized == ["exec-2"]
    assert (await state(db, 1), await state(db, 3)) == (S.IN_CALL, S.RINGING)
    payload = await result_of(db, 2)
    assert (payload["outcome"], payload["opt_out"]) == ("answered", True)
    again = await reconciler(db, cell).reconcile()
    assert again.to_ack == ["exec-2"]  # finalized but still tracked by the cell: acknowledge


async def test_orphan_of_a_lost_call_opens_its_recording(db: Database) -> None:
    await given(db, (1, S.IN_CALL, OLD, 30), (2, S.IN_CALL, OLD, 30))
    cell = FakeCell(
        [NEW],
        orphan_list=[
            CellOrphan("exec-1", OLD, True, 80044, "c" * 64, 5000, None),
            CellOrphan("exec-2", OLD, False, 80044, "d" * 64, 5000, "unknown"),
        ],
    )
    opener = Opener("recordings", "calls", 900)
    round_ = await reconciler(db, cell, open_recording=opener).reconcile()
    assert round_.finalized == []  # their call.result waits for the recording
    first = await db.read(recording_store.get, "exec-1")
    second = await db.read(recording_store.get, "exec-2")
    assert first is not None and second is not None
    assert first.state is RecordingState.READY and first.media is not None
    assert first.media.partial and first.source.value == "orphan"
    assert second.state is RecordingState.PUT_UNKNOWN  # died mid-PUT: verify, never re-PUT
    assert await state(db, 1) is S.ENDED  # D-CMD-4: occupancy released at the confirmed end


async def test_waiting_recording_finds_its_file_among_the_orphans(db: Database) -> None:
    """The call ended before the cell died, its file not yet reported: found as orphan."""
    await given(db, (1, S.IN_CALL, OLD, 30))
    opener = Opener("recordings", "calls", 900)
    ended = cell_call("exec-1", "ended", recording_expected=True)
    await reconciler(db, FakeCell([OLD], [ended]), open_recording=opener).reconcile()
    rec = await db.read(recording_store.get, "exec-1")
    assert rec is not None and rec.state is RecordingState.WAITING
    orphan = CellOrphan("exec-1", OLD, False, 80044, "c" * 64, 5000, None)
    cell = FakeCell([NEW], orphan_list=[orphan])
    await reconciler(db, cell, open_recording=opener).reconcile()
    rec = await db.read(recording_store.get, "exec-1")
    assert rec is not None and rec.state is RecordingState.READY
    assert rec.media is not None and rec.media.checksum_sha256 == "c" * 64
