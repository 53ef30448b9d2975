"""POST /v1/tasks:batch (docs/orbit/task-control.md §4): 1-100 submit bodies under one
Idempotency-Key, accepted all together or not at all. Each item follows the single-submit rules
(O-SUB-3); every invalid item is reported (`tasks[i].field`), none is written. Pure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from agentcall.orbit.domain.canonical import Digest, digest
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.submit import (
    SubmitRequest,
    TaskTimes,
    parse_submit,
    plan_times,
    submit_document,
)
from agentcall.orbit.domain.task import Task

OPERATION = "tasks.batch"
MAX_BATCH = 100
T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True, slots=True)
class ItemError:
    index: int
    field: str | None
    message: str


class BatchInvalid(InvalidArgument):
    """One or more items of a batch are invalid: fix every item listed in `items` (nothing of
    the batch was accepted)."""

    def __init__(self, items: Sequence[ItemError]) -> None:
        listed = "; ".join(f"{_where(e)}: {e.message}" for e in items[:10])
        more = f" (and {len(items) - 10} more)" if len(items) > 10 else ""
        super().__init__(f"{len(items)} invalid item(s), nothing accepted: {listed}{more}")
        self.items = tuple(items)


def _where(error: ItemError) -> str:
    return f"tasks[{error.index}]" + (f".{error.field}" if error.field else "")


@dataclass(frozen=True, slots=True)
class BatchRequest:
    items: tuple[SubmitRequest, ...]


def parse_batch(body: JsonValue) -> BatchRequest:
    fields = ObjectReader(body, frozenset({"tasks"}))
    raw = fields.raw("tasks", required=True)
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_BATCH:
        raise InvalidArgument(f"must be an array of 1-{MAX_BATCH} submit bodies", "tasks")
    return BatchRequest(tuple(each_or_errors(raw, lambda _, item: parse_submit(item))))


def batch_digest(request: BatchRequest) -> Digest:
    """Covers every item, in order (the same items in another order are other content)."""
    return digest(OPERATION, {"tasks": [submit_document(item) for item in request.items]})


def plan_batch(request: BatchRequest, now: datetime) -> list[TaskTimes]:
    """The times of every item at `now`, or BatchInvalid listing every item that fails."""
    return each_or_errors(request.items, lambda _, item: plan_times(item, now))


def receipt_items(tasks: Sequence[Task]) -> list[JsonValue]:
    return [
        {
            "index": index,
            "task_id": task.id,
            "state": task.state.value,
            "revision": str(task.revision),
        }
        for index, task in enumerate(tasks)
    ]


def each_or_errors(items: Sequence[T], check: Callable[[int, T], U]) -> list[U]:
    """`check` applied to every item; if any raise InvalidArgument, BatchInvalid lists all."""
    done: list[U] = []
    errors: list[ItemError] = []
    for index, item in enumerate(items):
        try:
            done.append(check(index, item))
        except InvalidArgument as exc:
            message = exc.message.removeprefix(f"{exc.field}: ") if exc.field else exc.message
            errors.append(ItemError(index, exc.field, message))
    if errors:
        raise BatchInvalid(errors)
    return done
