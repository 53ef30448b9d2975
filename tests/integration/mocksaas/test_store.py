"""The SQLite store on a real file: the SQL page selection equals the reference rule
(D-DISC-2), event ids are per dispatcher and gap-free, faults are consumed once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcall.mocksaas.domain.discovery import select_latest
from agentcall.mocksaas.domain.faults import ConfigResource, Fault, FaultScope
from agentcall.mocksaas.domain.task_config import TaskSpec
from agentcall.mocksaas.domain.tasks import QueueState, TaskStatus
from agentcall.mocksaas.store import dispatchers, faults, tasks
from agentcall.mocksaas.store.db import connect, in_transaction
from agentcall.mocksaas.store.dispatchers import Dispatcher
from agentcall.mocksaas.store.tasks import TaskRow

pytestmark = pytest.mark.integration
D1 = "11111111-1111-4111-8111-111111111111"
D2 = "22222222-2222-4222-8222-222222222222"
AT = "2026-09-21T00:00:00.000Z"


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    c = connect(Path(tmp_path_factory.mktemp("store")) / "state.db")
    yield c
    c.close()


def fresh(conn: sqlite3.Connection, d: str) -> None:
    in_transaction(conn, dispatchers.purge, d)
    in_transaction(conn, dispatchers.insert, Dispatcher(d, "s", True, None, 0, AT))


def row(d: str, task_id: str, status: TaskStatus, rev: int) -> TaskRow:
    return TaskRow(
        d, task_id, "ten", "ten", status, rev, TaskSpec(), QueueState.ACTIVE, 0, None, None, AT
    )


STATUSES = [TaskStatus.RUNNING, TaskStatus.PAUSED, TaskStatus.STOPPED, TaskStatus.REMOVED]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    changes=st.lists(
        st.tuples(st.integers(0, 12), st.sampled_from(STATUSES)), min_size=1, max_size=80
    ),
    after=st.integers(0, 90),
    limit=st.integers(1, 20),
)
def test_d_disc_2_sql_page_equals_reference(
    conn: sqlite3.Connection, changes: list[tuple[int, TaskStatus]], after: int, limit: int
) -> None:
    fresh(conn, D1)
    revisions: dict[str, int] = {}
    for n, status in changes:
        task_id = f"t{n}-{D1[:4]}"
        revisions[task_id] = revisions.get(task_id, 0) + 1
        in_transaction(conn, tasks.append_event, row(D1, task_id, status, revisions[task_id]), AT)
    head = dispatchers.get(conn, D1).head
    assert head == len(changes)
    log = tasks.event_log(conn, D1)
    assert [e.event_id for e in log] == list(range(1, head + 1))  # gap-free, per D
    after = min(after, head)
    assert tasks.page(conn, D1, after, limit) == select_latest(log, after, limit)


def test_event_ids_are_per_dispatcher_and_rollback_keeps_the_head(conn: sqlite3.Connection) -> None:
    fresh(conn, D1)
    fresh(conn, D2)
    in_transaction(conn, tasks.append_event, row(D1, "a-x", TaskStatus.RUNNING, 1), AT)
    in_transaction(conn, tasks.append_event, row(D2, "b-x", TaskStatus.RUNNING, 1), AT)

    def failing(c: sqlite3.Connection) -> None:
        tasks.append_event(c, row(D1, "a-x", TaskStatus.PAUSED, 2), AT)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        in_transaction(conn, failing)
    assert (dispatchers.get(conn, D1).head, dispatchers.get(conn, D2).head) == (1, 1)
    found = tasks.find(conn, "a-x")
    assert found is not None and found.status is TaskStatus.RUNNING
    removed = in_transaction(
        conn, tasks.append_event, replace(found, status=TaskStatus.REMOVED, task_revision=2), AT
    )
    assert removed.removed_event_id == removed.last_event_id == 2


def test_faults_consumed_in_order_and_by_target(conn: sqlite3.Connection) -> None:
    fresh(conn, D1)
    arm = [
        Fault(0, FaultScope.CONFIG, "not_found", 2, ConfigResource.TASK, "t1"),
        Fault(0, FaultScope.CONFIG, "unavailable", 1, ConfigResource.TASK),
    ]
    for f in arm:
        in_transaction(conn, faults.arm, D1, f)
    take = [
        in_transaction(conn, faults.take, D1, FaultScope.CONFIG, ConfigResource.TASK, t)
        for t in ("t2", "t1", "t1", "t1")
    ]
    assert [f.kind if f else None for f in take] == ["unavailable", "not_found", "not_found", None]
    assert faults.list_for(conn, D1) == []
