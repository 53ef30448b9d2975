"""Control adapters on real SQLite: hangup policy over executions, fresh-read mapping."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agentcall.dispatcher.cell.fake import FakeCell
from agentcall.dispatcher.control.adapters import CacheTaskReader, CellActiveCalls
from agentcall.dispatcher.domain.admission import Accept, decide
from agentcall.dispatcher.domain.control import ReadFailure
from agentcall.dispatcher.domain.states import ExecutionState
from agentcall.dispatcher.saas.cache import TaskLookup
from agentcall.dispatcher.store import executions
from agentcall.dispatcher.store.db import Database
from tests.integration.dispatcher.rows import accept_execution
from tests.support import dispatcher_factories as f

pytestmark = pytest.mark.integration


async def _execution(db: Database, n: str, task_id: str, state: ExecutionState) -> None:
    result = decide(
        f.command(command_id=f"c-{n}"), f.view(), f.sip(), f.quota(), f.occupancy(), f.NOW
    )
    assert isinstance(result, Accept)
    plan = dataclasses.replace(result.plan, task_id=task_id, command_id=f"c-{n}")

    def write(conn: Any) -> None:
        accept_execution(
            conn,
            plan,
            execution_id=f"x-{n}",
            call_id=f"call-{n}",
            result_event_id=f"r-{n}",
            call_result_event_id=f"cr-{n}",
            now=f.NOW,
        )
        path = {
            ExecutionState.ACCEPTED: [],
            ExecutionState.DIALING: [ExecutionState.DIALING],
            ExecutionState.IN_CALL: [ExecutionState.DIALING, ExecutionState.IN_CALL],
            ExecutionState.ENDED: [ExecutionState.DIALING, ExecutionState.ENDED],
        }[state]
        for step in path:
            executions.move(conn, f"x-{n}", step, f.NOW)

    await db.write(write)


async def test_hangup_policy_hangs_up_live_calls_of_that_task_only_d_ctl_2(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "state.sqlite")
    try:
        await _execution(db, "1", "task-a", ExecutionState.IN_CALL)
        await _execution(db, "2", "task-a", ExecutionState.DIALING)
        await _execution(db, "3", "task-a", ExecutionState.ENDED)
        await _execution(db, "4", "task-b", ExecutionState.IN_CALL)
        await _execution(db, "ended", "task-a", ExecutionState.IN_CALL)
        await _execution(db, "5", "task-a", ExecutionState.ACCEPTED)
        cell = FakeCell(gone={"call-ended"})  # hangup only: already ended is refused

        async def dial_later() -> None:
            await asyncio.sleep(0.2)
            await db.write(executions.move, "x-5", ExecutionState.DIALING, f.NOW)

        dialer = asyncio.create_task(dial_later())
        hung = await CellActiveCalls(db, cell, settle_s=2.0).hangup_task("task-a")
        await dialer
        assert sorted(cell.hung) == ["call-1", "call-2", "call-5", "call-ended"]
        assert hung == 4
    finally:
        await db.close()


class LookupCache:
    def __init__(self, lookup: TaskLookup) -> None:
        self.lookup = lookup
        self.fresh: list[bool] = []
        self.dropped: list[str] = []

    async def task(self, task_id: str, fresh: bool = False) -> TaskLookup:
        self.fresh.append(fresh)
        return self.lookup

    def drop_task(self, task_id: str) -> None:
        self.dropped.append(task_id)


@pytest.mark.parametrize(
    ("lookup", "expected"),
    [
        (TaskLookup(None, missing=True, error="resource_not_found"), ReadFailure.NOT_FOUND),
        (TaskLookup(None, error="service_unavailable"), ReadFailure.UNAVAILABLE),
        (TaskLookup(None, error="timeout"), ReadFailure.UNAVAILABLE),
        (TaskLookup(None, error="unauthorized"), ReadFailure.REFUSED),
        (TaskLookup(None, error="schema_violation"), ReadFailure.INVALID),
    ],
)
async def test_fresh_read_bypasses_the_cache_and_maps_failures_d_ctl_3(
    lookup: TaskLookup, expected: ReadFailure
) -> None:
    cache = LookupCache(lookup)
    reader = CacheTaskReader(cache)  # type: ignore[arg-type]
    assert await reader.read_fresh("task-a") is expected
    reader.forget("task-a")
    assert cache.fresh == [True] and cache.dropped == ["task-a"]


async def test_fresh_read_returns_the_config() -> None:
    config = f.task_config()
    reader = CacheTaskReader(LookupCache(TaskLookup(config)))  # type: ignore[arg-type]
    assert await reader.read_fresh("task-a") is config
