"""SQLite state on a real file: migrations, durability pragmas, atomic pages, outbox rules."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentcall.dispatcher.discovery import transaction as discovery_tx
from agentcall.dispatcher.domain.admission import Accept, Plan, decide
from agentcall.dispatcher.domain.discovery import DiscoveredTask
from agentcall.dispatcher.domain.states import Barrier, ExecutionState, InboxDecision, TaskStatus
from agentcall.dispatcher.store import agents, executions, inbox, outbox, rejected, tasks
from agentcall.dispatcher.store.db import Database, _migration_files, migrate
from tests.integration.dispatcher.rows import accept_execution
from tests.support import dispatcher_factories as f

pytestmark = pytest.mark.integration
NOW = datetime(2026, 9, 21, 2, tzinfo=UTC)


@pytest.fixture
async def db(tmp_path: Path) -> Database:
    database = await Database.open(tmp_path / "state.sqlite")
    yield database  # type: ignore[misc]
    await database.close()


def row(task_id: str = "task-a", status: str = "running", rev: int = 1) -> DiscoveredTask:
    return DiscoveredTask(task_id, "tenant-1", "tenant-a", TaskStatus(status), rev)


async def test_pragmas_and_migrations_are_idempotent(db: Database) -> None:
    mode = await db.read(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0])
    sync = await db.read(lambda c: c.execute("PRAGMA synchronous").fetchone()[0])
    assert (mode, sync) == ("wal", 2)  # 2 = FULL
    assert await db.read(migrate) == _migration_files()[-1][0]  # newest, nothing re-applied
    assert await db.read(tasks.get_cursor) == 0


async def test_page_and_cursor_commit_together_d_disc_5(db: Database) -> None:
    """D-DISC-5: the page's rows and the cursor commit in one transaction; a failed commit
    leaves both the cursor and the task rows as they were."""
    await db.write(discovery_tx.apply_page, (row(),), 0, 5, NOW)
    assert await db.read(tasks.get_cursor) == 5

    def failing(conn: sqlite3.Connection) -> None:
        discovery_tx.apply_page(conn, (row("task-b"),), 5, 9, NOW)
        raise RuntimeError("crash before commit")

    with pytest.raises(RuntimeError):
        await db.write(failing)
    assert await db.read(tasks.get_cursor) == 5
    assert set(await db.read(tasks.load_tasks)) == {"task-a"}


async def test_stale_after_is_refused(db: Database) -> None:
    await db.write(discovery_tx.apply_page, (row(),), 0, 5, NOW)
    with pytest.raises(RuntimeError, match="cursor moved"):
        await db.write(discovery_tx.apply_page, (row(),), 0, 6, NOW)


async def test_discovery_keeps_barriers_and_tombstones_d_disc_7_d_disc_8(db: Database) -> None:
    await db.write(discovery_tx.apply_page, (row(),), 0, 1, NOW)
    await db.write(tasks.set_barrier, "task-a", Barrier.PAUSED, NOW)
    await db.write(discovery_tx.apply_page, (row(rev=2),), 1, 2, NOW)
    task = await db.read(tasks.get_task, "task-a")
    assert task is not None and task.barrier is Barrier.PAUSED and task.task_revision == 2
    await db.write(discovery_tx.apply_page, (row(status="removed", rev=3),), 2, 3, NOW)
    task = await db.read(tasks.get_task, "task-a")
    assert task is not None and task.barrier is Barrier.REMOVED


async def test_outbox_blocks_oversize_payload_d_id_3(db: Database) -> None:
    big = {"blob": "x" * 8_388_608}
    state = await db.write(
        outbox.enqueue,
        event_id="e-big",
        event_type="call.result",
        routing_key="r",
        body=big,
        now=NOW,
    )
    assert state.value == "blocked_payload_too_large"
    small = await db.write(
        outbox.enqueue,
        event_id="e-1",
        event_type="command.result",
        routing_key="r",
        body={},
        now=NOW,
    )
    assert small.value == "pending"
    assert [r.event_id for r in await db.read(outbox.pending, 10)] == ["e-1"]
    listed = await db.read(outbox.blocked)
    assert listed[0]["event_id"] == "e-big" and listed[0]["size_bytes"] > 8_388_608
    assert len(listed[0]["sha256"]) == 64
    await db.write(outbox.mark_delivered, [1, 2], NOW)
    assert await db.read(outbox.counts) == {
        "pending": 0,
        "delivered": 1,
        "blocked_payload_too_large": 1,
    }


async def test_outbox_same_event_id_keeps_first_body_d_res_1(db: Database) -> None:
    for body in ({"v": 1}, {"v": 2}):
        await db.write(
            outbox.enqueue, event_id="e", event_type="t", routing_key="r", body=body, now=NOW
        )
    rows = await db.read(outbox.pending, 10)
    assert len(rows) == 1 and rows[0].body == b'{"v":1}'


async def test_inbox_dedupes_command_ids_d_cmd_1(db: Database) -> None:
    kw = dict(task_id="t", reason_code=None, execution_id=None, result_event_id=None, now=NOW)
    await db.write(inbox.record, command_id="c1", decision=InboxDecision.REJECTED, **kw)  # type: ignore[arg-type]
    assert await db.read(inbox.known_commands, ["c1", "c2"]) == {"c1"}
    with pytest.raises(sqlite3.IntegrityError):
        await db.write(inbox.record, command_id="c1", decision=InboxDecision.REJECTED, **kw)  # type: ignore[arg-type]


def _accept(conn: sqlite3.Connection, plan: Plan, n: int) -> None:
    """Command `command-<n>` (its plan) accepted as execution `x<n>` (call `call-<n>`)."""
    accept_execution(
        conn,
        plan,
        execution_id=f"x{n}",
        call_id=f"call-{n}",
        result_event_id=f"r{n}",
        call_result_event_id=f"cr{n}",
        now=NOW,
    )


async def test_occupancy_derived_from_executions_d_cmd_4(db: Database) -> None:
    result = decide(f.command(), f.view(), f.sip(), f.quota(), f.occupancy(), f.NOW)
    assert isinstance(result, Accept)
    await db.write(_accept, result.plan, 1)
    index = await db.read(executions.occupancy)
    assert index.view("tenant-1", "task-a").task == 1
    for state in (ExecutionState.DIALING, ExecutionState.UNKNOWN):
        await db.write(executions.move, "x1", state, NOW)
        assert (await db.read(executions.occupancy)).view("tenant-1", "task-a").tenant == 1
    await db.write(executions.move, "x1", ExecutionState.ENDED, NOW)
    assert (await db.read(executions.occupancy)).view("tenant-1", "task-a").tenant == 0
    loaded = await db.read(executions.get, "x1")
    assert loaded.plan == result.plan


async def test_occupancy_counts_every_holding_state_through_the_live_index_d_cmd_4(
    db: Database,
) -> None:
    """Each state that holds capacity counts, per tenant, task and trunk, however many
    executions share them; the ended and finalized ones do not. The count is read through
    the partial index of live executions (never a scan of every execution ever made),
    whose condition names exactly the states that release capacity."""
    result = decide(f.command(), f.view(), f.sip(), f.quota(), f.occupancy(), f.NOW)
    assert isinstance(result, Accept)
    S = ExecutionState
    paths = {
        S.ACCEPTED: (),
        S.DIALING: (S.DIALING,),
        S.RINGING: (S.DIALING, S.RINGING),
        S.IN_CALL: (S.DIALING, S.IN_CALL),
        S.UNKNOWN: (S.DIALING, S.UNKNOWN),
        S.ENDED: (S.DIALING, S.ENDED),
        S.FINALIZED: (S.DIALING, S.ENDED, S.FINALIZED),
    }
    assert set(paths) == set(S)
    for n, path in enumerate(paths.values()):
        await db.write(_accept, replace(result.plan, command_id=f"command-{n}"), n)
        if path:
            await db.write(executions.move_through, f"x{n}", path, NOW)
    await db.write(_accept, replace(result.plan, command_id="other", task_id="task-b"), 99)
    holding = sum(1 for s in S if s.holds_occupancy)
    view = (await db.read(executions.occupancy)).view("tenant-1", "task-a")
    assert (view.tenant, view.task) == (holding + 1, holding)
    assert view.on_trunk(result.plan.trunk_id) == holding + 1
    condition = await db.read(
        lambda c: c.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'executions_live'"
        ).fetchone()[0]
    )
    named = {s for s in S if f"'{s.value}'" in condition}
    assert named == {s for s in S if not s.holds_occupancy}


def _plans(conn: sqlite3.Connection, read: Callable[[sqlite3.Connection], object]) -> list[str]:
    """The query plan of every statement ``read`` runs (their SQL with values inlined)."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        read(conn)
    finally:
        conn.set_trace_callback(None)
    return [str(conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()) for sql in statements]


@pytest.mark.parametrize(
    "read",
    [
        executions.occupancy,
        executions.pending_rows,
        lambda conn: executions.in_states(conn, (ExecutionState.ACCEPTED,)),
    ],
    ids=["occupancy", "pending_rows", "in_states"],
)
async def test_reads_of_live_executions_never_scan_the_finished_ones(
    db: Database, read: Callable[[sqlite3.Connection], object]
) -> None:
    """Admission (occupancy), the unknown sweep and reconciliation (pending rows) and the
    start-up (the accepted ones; the crash rule reads the pending rows) read through the
    partial index of live executions: their cost does not grow with the finished ones."""
    plans = await db.read(_plans, read)
    assert plans and all("USING INDEX executions_live" in plan for plan in plans), plans


async def test_agent_version_content_is_immutable_d_cfg_2(db: Database) -> None:
    assert await db.write(agents.remember, "v1", "a" * 64, NOW)
    assert await db.write(agents.remember, "v1", "a" * 64, NOW)
    assert not await db.write(agents.remember, "v1", "b" * 64, NOW)


async def test_rejected_log_is_redacted_d_mq_5(db: Database) -> None:
    raw = b'{"callee": "15003164745", "secret": "hunter2"}'
    await db.write(
        rejected.record,
        source="mq:q",
        reason="schema_violation",
        detail="$.x fails",
        raw=raw,
        now=NOW,
    )
    [entry] = await db.read(rejected.latest)
    assert entry["size_bytes"] == len(raw) and len(entry["sha256"]) == 64
    assert "15003164745" not in str(entry) and "hunter2" not in str(entry)


async def test_mark_dialing_moves_accepted_ones_once_d_cmd_1(db: Database) -> None:
    """One statement marks a round ``dialing`` (stamped, boot kept); an execution that is
    no longer ``accepted`` is never marked again, so it is never sent twice."""
    result = decide(f.command(), f.view(), f.sip(), f.quota(), f.occupancy(), f.NOW)
    assert isinstance(result, Accept)
    for i in range(4):
        await db.write(_accept, replace(result.plan, command_id=f"command-{i}"), i)
    await db.write(executions.move, "x2", ExecutionState.DIALING, NOW)  # an earlier round
    later = datetime(2026, 9, 21, 2, 0, 5, tzinfo=UTC)
    marked = await db.write(executions.mark_dialing, ["x3", "x2", "x0", "nope"], "boot-1", later)
    assert [e.execution_id for e in marked] == ["x3", "x0"], "accepted only, in the given order"
    assert all(e.state is ExecutionState.DIALING and e.cell_boot_id == "boot-1" for e in marked)
    assert marked[0].plan == replace(result.plan, command_id="command-3")
    stored = await db.read(executions.get, "x0")
    assert stored == marked[1]
    assert await db.write(executions.mark_dialing, ["x0", "x3"], "boot-1", later) == []
    with sqlite3.connect(db.path) as conn:
        stamps = dict(conn.execute("SELECT execution_id, dial_started_at FROM executions"))
    assert stamps["x0"] == stamps["x3"] == "2026-09-21T02:00:05.000000+00:00"
    assert stamps["x1"] is None and stamps["x2"] == "2026-09-21T02:00:00.000000+00:00"
