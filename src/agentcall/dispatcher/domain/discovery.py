"""Validation of one task-discovery page (D-DISC-1..4, D-DISC-8): a pure function.

``check_page(body, after=…, dispatcher_id=…, known=…, schema_errors=…)`` returns either a
:class:`PageAccepted` (rows to persist together with ``next_cursor``) or a
:class:`PageRejected` naming the first rule the page breaks; a rejected page persists
nothing and the cursor stays where it was (D-DISC-4, D-DISC-9).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import Barrier, TaskStatus

UINT64_MAX = 2**64 - 1
MAX_TASK_QUEUES = 256  # D-MQ-6: task queues not yet retired per D
_CURSOR = re.compile(r"^(0|[1-9][0-9]{0,19})$")


class PageRejectReason(StrEnum):
    """Why a whole discovery page was refused."""

    SCHEMA_VIOLATION = "schema_violation"
    WRONG_DISPATCHER = "wrong_dispatcher"
    DUPLICATE_TASK = "duplicate_task"
    IDENTITY_CONFLICT = "identity_conflict"
    CURSOR_NOT_ADVANCING = "cursor_not_advancing"
    CURSOR_MOVED_ON_EMPTY = "cursor_moved_on_empty_page"
    REVISION_REGRESSION = "revision_regression"
    QUEUE_LIMIT = "queue_limit_exceeded"


@dataclass(frozen=True)
class DiscoveredTask:
    task_id: str
    tenant_id: str
    tenant_key: str
    status: TaskStatus
    task_revision: int


@dataclass(frozen=True)
class PageAccepted:
    tasks: tuple[DiscoveredTask, ...]
    next_cursor: int

    @property
    def caught_up(self) -> bool:
        """An empty page means this D has read everything up to now (D-DISC-3)."""
        return not self.tasks


@dataclass(frozen=True)
class PageRejected:
    reason: PageRejectReason
    detail: str


def parse_cursor(text: str) -> int | None:
    """Canonical decimal uint64 without leading zeros (D-DISC-1), else None."""
    if not _CURSOR.fullmatch(text):
        return None
    value = int(text)
    return value if value <= UINT64_MAX else None


def format_cursor(value: int) -> str:
    return str(value)


def check_page(
    body: Mapping[str, Any],
    *,
    after: int,
    dispatcher_id: str,
    known: Mapping[str, LocalTask],
    schema_errors: Sequence[str] = (),
    limit: int = MAX_TASK_QUEUES,
) -> PageAccepted | PageRejected:
    """Decide whether a 200 page for ``?after=<after>`` may be persisted."""
    if schema_errors:
        return PageRejected(PageRejectReason.SCHEMA_VIOLATION, "; ".join(schema_errors)[:500])
    cursor = parse_cursor(str(body["next_cursor"]))
    if cursor is None:
        return PageRejected(PageRejectReason.SCHEMA_VIOLATION, "next_cursor exceeds uint64")
    if body["dispatcher_id"] != dispatcher_id:
        return PageRejected(PageRejectReason.WRONG_DISPATCHER, "page is for another dispatcher")
    tasks = tuple(_row(item) for item in body["tasks"])
    problem = (
        _rows_problem(tasks, known)
        or _cursor_problem(tasks, after, cursor)
        or _limit_problem(tasks, known, limit)
    )
    return problem or PageAccepted(tasks, cursor)


def retired(task: LocalTask) -> bool:
    """A ``removed`` tombstone no longer has a task queue; every other task has one,
    stopped and draining included (D-MQ-6, D-NOTE-5)."""
    return task.status is TaskStatus.REMOVED or task.barrier is Barrier.REMOVED


def _limit_problem(
    tasks: tuple[DiscoveredTask, ...], known: Mapping[str, LocalTask], limit: int
) -> PageRejected | None:
    """D-NOTE-5: the page is refused whole if applying it leaves more than ``limit`` task
    queues not yet retired; no task is ever left silently unconsumed."""
    live = {t for t, task in known.items() if not retired(task)}
    for task in tasks:
        if task.status is TaskStatus.REMOVED:
            live.discard(task.task_id)
        else:
            live.add(task.task_id)
    if len(live) > limit:
        return PageRejected(
            PageRejectReason.QUEUE_LIMIT,
            f"{len(live)} task queues not yet retired after this page; at most {limit}",
        )
    return None


def _row(item: Mapping[str, Any]) -> DiscoveredTask:
    return DiscoveredTask(
        task_id=item["task_id"],
        tenant_id=item["tenant_id"],
        tenant_key=item["tenant_key"],
        status=TaskStatus(item["status"]),
        task_revision=int(item["task_revision"]),
    )


def _cursor_problem(
    tasks: tuple[DiscoveredTask, ...], after: int, cursor: int
) -> PageRejected | None:
    if not tasks and cursor != after:
        return PageRejected(
            PageRejectReason.CURSOR_MOVED_ON_EMPTY, f"empty page moved cursor {after}→{cursor}"
        )
    if tasks and cursor <= after:
        return PageRejected(
            PageRejectReason.CURSOR_NOT_ADVANCING, f"next_cursor {cursor} <= after {after}"
        )
    return None


def _rows_problem(
    tasks: tuple[DiscoveredTask, ...], known: Mapping[str, LocalTask]
) -> PageRejected | None:
    seen: set[str] = set()
    for task in tasks:
        if task.task_id in seen:
            return PageRejected(PageRejectReason.DUPLICATE_TASK, f"{task.task_id} twice in page")
        seen.add(task.task_id)
        before = known.get(task.task_id)
        if before is None:
            continue
        if (before.tenant_id, before.tenant_key) != (task.tenant_id, task.tenant_key):
            return PageRejected(
                PageRejectReason.IDENTITY_CONFLICT, f"{task.task_id} changed tenant identity"
            )
        if task.task_revision < before.task_revision:
            return PageRejected(
                PageRejectReason.REVISION_REGRESSION,
                f"{task.task_id} revision {task.task_revision} < {before.task_revision}",
            )
    return None
