"""Task-control state on a real SQLite file (migration 0002, D-CTL-*, D-DISC-7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcall.dispatcher.control.procedures import chooser
from agentcall.dispatcher.control.transaction import SqliteControlStore, set_barrier
from agentcall.dispatcher.discovery import transaction as discovery_tx
from agentcall.dispatcher.domain.control import JobPhase, ReadFailure
from agentcall.dispatcher.domain.discovery import DiscoveredTask
from agentcall.dispatcher.domain.states import Barrier, IllegalTransition, TaskStatus
from agentcall.dispatcher.store import outbox, tasks
from agentcall.dispatcher.store.db import Database
from tests.support.control_fakes import NOW, command, config

pytestmark = pytest.mark.integration
ROUTE = "d.c046b893-8628-4589-ae50-619d049248a6.out"


@pytest.fixture
async def db(tmp_path: Path) -> Database:
    database = await Database.open(tmp_path / "state.sqlite")
    yield database  # type: ignore[misc]
    await database.close()


async def page(db: Database, status: str, revision: int, task_id: str = "task-a") -> Barrier:
    after = await db.read(tasks.get_cursor)
    row = DiscoveredTask(task_id, "tenant-a", "tenant-a", TaskStatus(status), revision)
    stored = await db.write(discovery_tx.apply_page, (row,), after, after + 1, NOW)
    return stored[task_id].barrier


async def test_pause_closes_admission_in_the_same_commit_as_the_job_d_ctl_2(db: Database) -> None:
    store = SqliteControlStore(db, ROUTE)
    await page(db, "running", 1)
    job = await store.receive(command("pause"), "event-1", NOW)
    assert job.phase is JobPhase.RECEIVED and job.command.action.value == "pause"
    assert await store.barrier("task-a") is Barrier.CLOSED
    decided = await store.decide(job, chooser(job.command, config("paused", revision=2), NOW), NOW)
    assert decided.decision is not None and decided.decision.barrier is Barrier.PAUSED
    assert await store.barrier("task-a") is Barrier.PAUSED


async def test_discovery_running_never_lifts_and_stale_paused_never_recloses_d_disc_7(
    db: Database,
) -> None:
    store = SqliteControlStore(db, ROUTE)
    await page(db, "running", 1)
    assert await page(db, "paused", 2) is Barrier.CLOSED  # closes before the control
    assert await page(db, "running", 3) is Barrier.CLOSED  # running never lifts
    job = await store.receive(command("resume"), "event-1", NOW)
    await store.decide(job, chooser(job.command, config("running", revision=5), NOW), NOW)
    assert await store.barrier("task-a") is Barrier.NONE
    # A page fetched before the resume and applied after it must not close again,
    # nor overwrite the verified running status (admission would requeue forever).
    assert await page(db, "paused", 4) is Barrier.NONE
    stored = await db.read(tasks.get_task, "task-a")
    assert stored is not None and stored.status is TaskStatus.RUNNING
    assert await page(db, "paused", 6) is Barrier.CLOSED  # a newer pause does


async def test_verified_read_of_an_undiscovered_task_creates_it_safely(db: Database) -> None:
    store = SqliteControlStore(db, ROUTE)
    job = await store.receive(command("stop", task_id="task-n"), "event-1", NOW)
    assert await store.barrier("task-n") is None
    stopped = config("stopped", task_id="task-n", revision=9)
    await store.decide(job, chooser(job.command, stopped, NOW), NOW)
    assert await store.barrier("task-n") is Barrier.STOPPED
    # Discovery then brings the task (any revision): accepted, barrier kept.
    assert await page(db, "stopped", 3, task_id="task-n") is Barrier.STOPPED


async def test_failed_read_of_an_unknown_task_persists_nothing(db: Database) -> None:
    store = SqliteControlStore(db, ROUTE)
    job = await store.receive(command("pause", task_id="task-u"), "event-1", NOW)
    decided = await store.decide(job, chooser(job.command, ReadFailure.NOT_FOUND, NOW), NOW)
    assert decided.decision is not None and decided.decision.reason_code == "task_unavailable"
    assert await store.barrier("task-u") is None


async def test_receipt_keeps_its_event_id_and_body_d_ctl_1(db: Database) -> None:
    store = SqliteControlStore(db, ROUTE)
    await page(db, "running", 1)
    job = await store.receive(command("pause"), "event-77", NOW)
    job = await store.decide(job, chooser(job.command, config("paused"), NOW), NOW)
    await store.complete(job, {"event_id": "event-77", "n": 1}, NOW)
    rows = await db.read(outbox.pending, 10)
    assert [(r.event_id, r.routing_key, json.loads(r.body)) for r in rows] == [
        ("event-77", ROUTE, {"event_id": "event-77", "n": 1})
    ]
    assert (await store.job(job.seq)).phase is JobPhase.DONE
    await store.complete(job, {"event_id": "event-77", "n": 2}, NOW)  # a retried completion
    rows = await db.read(outbox.pending, 10)
    assert [json.loads(r.body)["n"] for r in rows] == [1]  # same event_id, first body kept


async def test_stopped_is_irreversible_in_the_store_d_ctl_4(db: Database) -> None:
    await page(db, "running", 1)
    await db.write(set_barrier, "task-a", Barrier.STOPPED, NOW)
    with pytest.raises(IllegalTransition):
        await db.write(set_barrier, "task-a", Barrier.NONE, NOW)
    assert await page(db, "running", 2) is Barrier.STOPPED
    assert await page(db, "removed", 3) is Barrier.REMOVED


async def test_open_jobs_and_drains_survive_a_restart_d_ctl_4(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    db = await Database.open(path)
    store = SqliteControlStore(db, ROUTE)
    await page(db, "running", 1)
    first = await store.receive(command("pause"), "event-1", NOW)
    await store.receive(command("stop"), "event-2", NOW)
    await store.decide(first, chooser(first.command, config("paused"), NOW), NOW)
    await store.start_drain("task-a", NOW)
    await store.note_drain("task-a", 4000, NOW)
    await db.close()

    db = await Database.open(path)
    store = SqliteControlStore(db, ROUTE)
    jobs = await store.open_jobs()
    assert [(j.event_id, j.phase) for j in jobs] == [
        ("event-1", JobPhase.DECIDED),
        ("event-2", JobPhase.RECEIVED),
    ]
    assert jobs[0].decision is not None and jobs[0].decision.barrier is Barrier.PAUSED
    assert await store.drain_pending("task-a")
    await store.finish_drain("task-a", NOW)
    assert not await store.drain_pending("task-a")
    await store.reject_input("mq:control", "schema_violation", "bad", b"{}", NOW)
    await db.close()
