"""A command admitted again after the D's state was lost is never dialled twice (D-CMD-1).

On real SQLite files with the one fake cell behind the CellPort. The same command admitted
on two empty state files gets the same execution id, call id and result event ids; the
second D's originate of that call id is answered by the cell as dialled before (refused,
or the call returned as it is), and the D adopts the cell's call: it follows a live one,
finalizes an ended one with its real outcome, and ends one the cell holds no more as
``failed`` / ``cell_already_dialled`` — one call.result each, never a second originate.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentcall.dispatcher.admission.transaction import Inputs, Valid, run_batch
from agentcall.dispatcher.calls.service import CallSupervisor
from agentcall.dispatcher.calls.verdicts import LOST_ALREADY_DIALLED
from agentcall.dispatcher.cell.fake import FakeBatchingCell, FakeCell
from agentcall.dispatcher.cell.port import CallIdTaken, CellCall, CellPlan, CellPortError
from agentcall.dispatcher.domain import callids
from agentcall.dispatcher.domain.discovery import DiscoveredTask
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.saas.cache import TaskLookup
from agentcall.dispatcher.store import executions, inbox, outbox, tasks
from agentcall.dispatcher.store.db import Database
from tests.support import dispatcher_factories as f

from .test_crash_reconciler import cell_call

pytestmark = [pytest.mark.integration]


def _admit(conn: Any, command_ids: list[str]) -> list[str]:
    task = DiscoveredTask("task-a", "tenant-1", "tenant-a", TaskStatus.RUNNING, 2)
    tasks.upsert(conn, task, TaskStatus.RUNNING, Barrier.NONE, None, f.NOW.isoformat())
    inp = Inputs(
        dispatcher_id=f.D_ID,
        routing_key="rk",
        sip=f.sip(),
        configs={"task-a": TaskLookup(f.task_config(max_concurrent_calls=100))},
        quotas={("tenant-1", "tenant-a"): f.quota(max_concurrent_calls=100)},
        now=f.NOW,
    )
    items = [Valid(f.command(command_id=c), "task-a") for c in command_ids]
    return run_batch(conn, items, inp).accepted


async def _fresh(path: Path, command_ids: list[str]) -> tuple[Database, list[str]]:
    db = await Database.open(path)
    return db, await db.write(_admit, command_ids)


def _ids(conn: Any, execution_id: str) -> tuple[str, str, str | None]:
    execution = executions.get(conn, execution_id)
    row = conn.execute(
        "SELECT result_event_id FROM inbox WHERE execution_id = ?", (execution_id,)
    ).fetchone()
    return execution.call_id, execution.call_result_event_id, row[0]


async def test_the_same_command_on_two_empty_state_files_gets_the_same_ids(
    tmp_path: Path,
) -> None:
    first, accepted = await _fresh(tmp_path / "a.sqlite", ["command-1", "command-2"])
    second, again = await _fresh(tmp_path / "b.sqlite", ["command-1", "command-2"])
    try:
        assert accepted == again and len(set(accepted)) == 2
        derived = callids.execution_id(f.D_ID, "task-a", "command-1")
        assert accepted[0] == derived
        ids = await first.read(_ids, derived)
        assert ids == await second.read(_ids, derived)
        call_id, call_result, command_result = ids
        assert call_id == derived
        assert call_result == callids.call_result_event_id(derived)
        assert command_result == callids.command_result_event_id(f.D_ID, "command-1")
        assert await first.read(inbox.known_commands, ["command-1"]) == {"command-1"}
    finally:
        await first.close()
        await second.close()


# command id → what the cell holds under its call id, and how it answers the originate
TAKEN = CallIdTaken("already_dialled", "dialled before")
CONFLICT = CallIdTaken("call_id_conflict", "used by another plan")
CASES: list[tuple[str, str | None, CellPortError | None, S, str | None]] = [
    # name, the held call's state, the refusal (None: the call returned), state, outcome
    ("acknowledged before: nothing held", None, TAKEN, S.FINALIZED, LOST_ALREADY_DIALLED),
    ("ended, not acknowledged, refused", "ended", CONFLICT, S.FINALIZED, "answered"),
    ("ended, returned as it is", "ended", None, S.FINALIZED, "answered"),
    ("live, refused: followed", "answered", TAKEN, S.IN_CALL, None),
    ("live, returned as it is: followed", "dialing", None, S.DIALING, None),
]


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batch"])
@pytest.mark.parametrize(
    ("name", "held", "refusal", "state", "outcome"), CASES, ids=[c[0] for c in CASES]
)
async def test_a_call_id_dialled_before_is_adopted_never_dialled_again(
    tmp_path: Path,
    batching: bool,
    name: str,
    held: str | None,
    refusal: CellPortError | None,
    state: S,
    outcome: str | None,
) -> None:
    db, [execution_id] = await _fresh(tmp_path / "d.sqlite", ["command-1"])
    calls = [] if held is None else [cell_call(execution_id, held, boot_id="boot-1")]

    def answer(plan: CellPlan) -> CellCall | CellPortError:
        return refusal if refusal is not None else calls[0]

    kind = FakeBatchingCell if batching else FakeCell
    cell = kind(calls=calls, answer=answer)
    supervisor = CallSupervisor(
        db,
        cell,
        dispatcher_id=f.D_ID,
        routing_key="rk",
        clock=lambda: f.NOW,
        on_outbox=lambda: None,
    )
    supervisor.boot_id = "boot-1"
    supervisor.submit([execution_id])
    dialer = asyncio.create_task(supervisor._dialer())
    try:
        async with asyncio.timeout(10):
            while not cell.originated and not cell.sent or supervisor._inflight:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
        supervisor.submit([execution_id])  # a re-scan: still never sent again
        await asyncio.sleep(0.1)
    finally:
        dialer.cancel()
        await asyncio.gather(dialer, return_exceptions=True)
    try:
        assert cell.originated + [c for r in cell.sent for c in r] == [execution_id]
        assert (await db.read(executions.get, execution_id)).state is state
        assert not supervisor._dial_paused, "a call id dialled before is no cell outage"
        rows = [r for r in await db.read(outbox.pending, 50) if r.event_type == "call.result"]
        if outcome is None:
            assert rows == []
        else:
            [row] = rows
            assert row.event_id == callids.call_result_event_id(execution_id)
            payload = json.loads(row.body)["payload"]
            assert outcome in (payload["outcome"], payload["reason_code"])
            assert cell.acked == ([] if held is None else [execution_id])
    finally:
        await db.close()
