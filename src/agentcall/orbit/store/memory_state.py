"""What the in-memory twin (`agentcall.orbit.store.memory`) holds: the same records as the
SQL tables (tasks, attempts, events, idempotency receipts, audit lines, evidence, tokens,
offers), each kept under the key its table is unique on, and how a column-value row from the
pure row builders (`agentcall.orbit.domain.transitions`) is applied to a task.

A transaction works on a copy (`MemoryState.copy`) and replaces the committed state only when
it ends without an error: a failure anywhere leaves nothing written, as a rollback does."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.attempts import AttemptState
from agentcall.orbit.domain.evidence import EvidenceItem
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.lease_order import lease_order
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import TokenRecord
from agentcall.orbit.store.sql import ConcurrentChange

Row = dict[str, Any]

# task columns whose Task field has another name
_TASK_FIELD = {"result": "result_text", "attempt_error": "attempt_error_text"}
_TASK_FIELDS = frozenset(f.name for f in fields(Task))
_STATES = {"state": TaskState}


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One idempotency record: the first receipt of a key, for the task it made or changed."""

    receipt: StoredReceipt
    task_id: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Offer:
    """A standing offer of a free worker slot; `task_id` once a submit claimed it."""

    namespace_id: str
    queue_id: str
    task_id: str | None = None


@dataclass(slots=True)
class MemoryState:
    tasks: dict[str, Task] = field(default_factory=dict)
    lease_counts: dict[str, int] = field(default_factory=dict)
    attempts: dict[str, Row] = field(default_factory=dict)
    events: dict[tuple[str, int], Row] = field(default_factory=dict)  # unique (task, revision)
    receipts: dict[Scope, StoredRecord] = field(default_factory=dict)
    audits: list[Row] = field(default_factory=list)
    evidence: dict[str, list[tuple[EvidenceItem, datetime]]] = field(default_factory=dict)
    tokens: dict[str, TokenRecord] = field(default_factory=dict)  # by secret SHA-256
    queues: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (namespace, name)
    namespaces: dict[str, str] = field(default_factory=dict)  # id -> name
    offers: dict[str, Offer] = field(default_factory=dict)

    def copy(self) -> MemoryState:
        """A copy a transaction may change freely: records are replaced, never mutated, so
        copying the containers (and the rows, which are dicts) is enough."""
        return MemoryState(
            tasks=dict(self.tasks),
            lease_counts=dict(self.lease_counts),
            attempts={key: dict(row) for key, row in self.attempts.items()},
            events=dict(self.events),
            receipts=dict(self.receipts),
            audits=list(self.audits),
            evidence={key: list(items) for key, items in self.evidence.items()},
            tokens=dict(self.tokens),
            queues=dict(self.queues),
            namespaces=dict(self.namespaces),
            offers=dict(self.offers),
        )

    # ------------------------------------------------------------------ writes
    def add_event(self, row: Row) -> None:
        """One event per task revision, as the table's unique key demands."""
        key = (row["task_id"], row["revision"])
        if key in self.events:
            raise ConcurrentChange(f"task {key[0]} already has an event at revision {key[1]}")
        self.events[key] = dict(row)

    def move_task(self, task_id: str, state: TaskState, revision: int, values: Row) -> Task:
        """The conditional task update of the SQL store: from (`state`, `revision`) to
        `values`; `ConcurrentChange` when the task is not in that state at that revision."""
        task = self.tasks.get(task_id)
        if task is None or task.state is not state or task.revision != revision:
            raise ConcurrentChange(f"task {task_id} changed concurrently")
        moved = apply_task_values(task, values)
        self.tasks[task_id] = moved
        return moved

    def move_attempt(self, attempt_id: str, state: AttemptState, values: Row) -> Row:
        """The conditional attempt update: only from `state`."""
        row = self.attempts.get(attempt_id)
        if row is None or row["state"] != state.value:
            raise ConcurrentChange(f"attempt {attempt_id} changed concurrently")
        row.update({key: value for key, value in values.items() if key != "id"})
        return row


def apply_task_values(task: Task, values: Row) -> Task:
    """`task` with the column values of a row builder (the `id` column is the key)."""
    changes: dict[str, Any] = {}
    _check_lease_order(task, values)
    for column, value in values.items():
        if column in ("id", "lease_count", "lease_order"):
            continue
        if column == "retry_max_attempts":  # a column of the task's retry policy
            changes["retry"] = replace(changes.get("retry", task.retry), max_attempts=value)
            continue
        name = _TASK_FIELD.get(column, column)
        if name not in _TASK_FIELDS:
            raise KeyError(f"tasks have no column {column!r}")
        kind = _STATES.get(column)
        changes[name] = kind(value) if kind is not None and value is not None else value
    return replace(task, **changes)


def _check_lease_order(task: Task, values: Row) -> None:
    """The twin orders by `lease_order` of `available_at` and the priority itself; a row that
    moves `available_at` must carry that same order for the SQL stores' index."""
    if "available_at" not in values and "lease_order" not in values:
        return
    available = values.get("available_at", task.available_at)
    expected = lease_order(available, task.flow.priority)
    if values.get("lease_order") != expected:
        raise ValueError(
            f"a row moving available_at must write lease_order {expected}, "
            f"not {values.get('lease_order')!r}"
        )
