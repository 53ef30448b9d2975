"""Discovery page validation: one row per rejection reason (D-DISC-1..4, D-DISC-8)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.dispatcher import contracts
from agentcall.dispatcher.domain.discovery import (
    UINT64_MAX,
    PageAccepted,
    PageRejected,
    PageRejectReason,
    check_page,
    parse_cursor,
)
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from tests.support.dispatcher_factories import D_ID

KNOWN = {
    "task-a": LocalTask("task-a", "tenant-1", "tenant-a", TaskStatus.RUNNING, 3),
}


def row(task_id: str = "task-a", **kw: Any) -> dict[str, Any]:
    base = {
        "task_id": task_id,
        "tenant_id": "tenant-1",
        "tenant_key": "tenant-a",
        "status": "running",
        "task_revision": 3,
    }
    return base | kw


def page(*rows: dict[str, Any], cursor: str = "20", **kw: Any) -> dict[str, Any]:
    body = {
        "schema_version": "task-discovery.v0.3-proposal",
        "dispatcher_id": D_ID,
        "tasks": list(rows),
        "next_cursor": cursor,
    }
    return body | kw


def run(body: dict[str, Any], after: int = 10) -> PageAccepted | PageRejected:
    try:
        contracts.validate(contracts.Kind.DISCOVERY_PAGE, body)
        errors: list[str] = []
    except contracts.ContractError as exc:
        errors = [str(exc)]
    return check_page(body, after=after, dispatcher_id=D_ID, known=KNOWN, schema_errors=errors)


REJECTS = [
    ("D-DISC-2 extra field", page(row(), extra=1), PageRejectReason.SCHEMA_VIOLATION),
    ("D-DISC-2 item field", page(row(event_id="1")), PageRejectReason.SCHEMA_VIOLATION),
    ("D-DISC-2 bad status", page(row(status="deleted")), PageRejectReason.SCHEMA_VIOLATION),
    ("D-DISC-1 leading zero", page(row(), cursor="020"), PageRejectReason.SCHEMA_VIOLATION),
    (
        "D-DISC-1 above uint64",
        page(row(), cursor=str(UINT64_MAX + 1)),
        PageRejectReason.SCHEMA_VIOLATION,
    ),
    (
        "D-DISC-4 wrong dispatcher",
        page(row(), dispatcher_id="11111111-1111-4111-8111-111111111111"),
        PageRejectReason.WRONG_DISPATCHER,
    ),
    ("D-DISC-4 task twice", page(row(), row(task_revision=4)), PageRejectReason.DUPLICATE_TASK),
    (
        "D-DISC-4 tenant changed",
        page(row(tenant_id="tenant-2")),
        PageRejectReason.IDENTITY_CONFLICT,
    ),
    (
        "D-DISC-4 tenant_key changed",
        page(row(tenant_key="tenant-x")),
        PageRejectReason.IDENTITY_CONFLICT,
    ),
    ("D-DISC-4 cursor equal", page(row(), cursor="10"), PageRejectReason.CURSOR_NOT_ADVANCING),
    ("D-DISC-4 cursor backwards", page(row(), cursor="9"), PageRejectReason.CURSOR_NOT_ADVANCING),
    ("D-DISC-3 empty page moves cursor", page(cursor="11"), PageRejectReason.CURSOR_MOVED_ON_EMPTY),
    (
        "D-DISC-4 revision backwards",
        page(row(task_revision=2)),
        PageRejectReason.REVISION_REGRESSION,
    ),
    (
        "D-NOTE-5 257 task queues",
        page(*(row(f"new-{n}") for n in range(256)), cursor="900"),
        PageRejectReason.QUEUE_LIMIT,
    ),
]


@pytest.mark.parametrize(("name", "body", "reason"), REJECTS, ids=[r[0] for r in REJECTS])
def test_page_rejected(name: str, body: dict[str, Any], reason: PageRejectReason) -> None:
    result = run(body)
    assert isinstance(result, PageRejected), name
    assert result.reason is reason


def test_every_rejection_reason_has_a_row() -> None:
    assert {r[2] for r in REJECTS} == set(PageRejectReason)


ACCEPTS = [
    ("D-DISC-3 empty page = caught up", page(cursor="10"), True),
    ("same task reappears with same revision", page(row()), False),
    ("new task", page(row("task-b", tenant_id="tenant-9")), False),
    ("D-DISC-8 removed tombstone", page(row(status="removed", task_revision=4)), False),
    ("two distinct tasks", page(row(), row("task-b")), False),
]


@pytest.mark.parametrize(("name", "body", "caught_up"), ACCEPTS, ids=[a[0] for a in ACCEPTS])
def test_page_accepted(name: str, body: dict[str, Any], caught_up: bool) -> None:
    result = run(body)
    assert isinstance(result, PageAccepted), name
    assert result.caught_up is caught_up
    assert result.next_cursor == int(body["next_cursor"])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("18446744073709551615", UINT64_MAX),
        ("01", None),
        ("-1", None),
        ("1.0", None),
        ("18446744073709551616", None),
        ("", None),
    ],
)
def test_parse_cursor_d_disc_1(text: str, value: int | None) -> None:
    assert parse_cursor(text) == value


def _known(count: int, **by_id: tuple[TaskStatus, Barrier]) -> dict[str, LocalTask]:
    known = {
        f"t-{n:03d}": LocalTask(f"t-{n:03d}", "tenant-1", "tenant-a", TaskStatus.RUNNING, 1)
        for n in range(count)
    }
    for task_id, (status, barrier) in by_id.items():
        known[task_id] = LocalTask(task_id, "tenant-1", "tenant-a", status, 1, barrier)
    return known


STOPPED = (TaskStatus.STOPPED, Barrier.STOPPED)
DRAINING = (TaskStatus.RUNNING, Barrier.STOPPED)
REMOVED = (TaskStatus.REMOVED, Barrier.REMOVED)


@pytest.mark.parametrize(
    ("known", "rows", "refused"),
    [
        pytest.param(_known(255), [row("new-1")], False, id="256 after the page"),
        pytest.param(_known(256), [row("new-1")], True, id="257th task"),
        pytest.param(
            _known(
                249,
                s1=STOPPED,
                s2=STOPPED,
                s3=STOPPED,
                s4=STOPPED,
                s5=STOPPED,
                s6=STOPPED,
                s7=DRAINING,
            ),
            [row("new-1")],
            True,
            id="stopped and draining count",
        ),
        pytest.param(
            _known(250, r1=REMOVED, r2=REMOVED),
            [row("new-1")],
            False,
            id="removed tombstones do not count",
        ),
        pytest.param(
            _known(256),
            [row("t-000", status="removed", task_revision=2), row("new-1")],
            False,
            id="a removal in the page frees one",
        ),
        pytest.param(
            _known(256),
            [row("t-000", task_revision=2)],
            False,
            id="an update of a known task adds none",
        ),
        pytest.param({}, [row(f"n-{n}") for n in range(256)], False, id="a full first page"),
    ],
)
def test_queue_limit_counts_every_unretired_task_d_note_5(
    known: dict[str, LocalTask], rows: list[dict[str, Any]], refused: bool
) -> None:
    result = check_page(page(*rows, cursor="900"), after=10, dispatcher_id=D_ID, known=known)
    if refused:
        assert isinstance(result, PageRejected)
        assert result.reason is PageRejectReason.QUEUE_LIMIT
    else:
        assert isinstance(result, PageAccepted)
