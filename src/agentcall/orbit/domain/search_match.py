"""Whether one task matches a search filter (`agentcall.orbit.domain.search.TaskFilter`),
as a pure predicate: the same terms as the SQL WHERE of `agentcall.orbit.store.search`
(equalities, the business key prefix as the range [prefix, prefix_end), half-open time
ranges, and `completed_before` also bounding `created_at`), for stores without SQL."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from agentcall.orbit.domain.search import TaskFilter, prefix_end
from agentcall.orbit.domain.states import TaskState


class Searchable(Protocol):
    @property
    def queue_id(self) -> str: ...
    @property
    def state(self) -> TaskState: ...
    @property
    def handler(self) -> str: ...
    @property
    def handler_version(self) -> str: ...
    @property
    def business_key(self) -> str | None: ...
    @property
    def error_code(self) -> str | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def completed_at(self) -> datetime | None: ...


def matches(where: TaskFilter, task: Searchable) -> bool:
    equal = [
        (task.queue_id, where.queue_id),
        (task.state, where.state),
        (task.handler, where.handler),
        (task.handler_version, where.handler_version),
        (task.business_key, where.business_key),
        (task.error_code, where.error_code),
    ]
    if any(wanted is not None and found != wanted for found, wanted in equal):
        return False
    if where.business_key_prefix is not None and not _has_prefix(
        task.business_key, where.business_key_prefix
    ):
        return False
    before = where.completed_before
    ranges = [
        (task.created_at, where.created_from, where.created_before),
        (task.completed_at, where.completed_from, before),
        (task.created_at, None, before),
    ]
    return all(_within(value, start, end) for value, start, end in ranges)


def _has_prefix(key: str | None, prefix: str) -> bool:
    if key is None or key < prefix:
        return False
    end = prefix_end(prefix)
    return end is None or key < end


def _within(value: datetime | None, start: datetime | None, before: datetime | None) -> bool:
    if start is None and before is None:
        return True
    if value is None:  # SQL: a comparison with NULL is not true
        return False
    return (start is None or value >= start) and (before is None or value < before)
