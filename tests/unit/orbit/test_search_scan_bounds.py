"""The task search's SQL bounds the keyset scan: a completed window also bounds created_at
(a task completes after its creation), so the first page of a completed window reads
(queue_id, created_at, id) from completed_before down, not from the queue's newest task
(docs/orbit/search.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.dialects import mysql

from agentcall.orbit.domain.search import parse_filter
from agentcall.orbit.store.search import page_query

pytestmark = pytest.mark.unit

QUEUE = "0" * 31 + "1"


def _where(params: dict[str, str]) -> str:
    query = page_query(parse_filter({"queue_id": QUEUE, **params}), None, 21)
    compiled = query.compile(dialect=mysql.dialect(), compile_kwargs={"literal_binds": True})
    return str(compiled).split("WHERE", 1)[1]


def test_a_completed_window_bounds_the_creation_time_too() -> None:
    before = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)
    where = _where(
        {"completed_from": "2026-11-03T11:00:00Z", "completed_before": "2026-11-03T12:00:00Z"}
    )
    assert "tasks.completed_at < '2026-11-03 12:00:00" in where
    assert f"tasks.created_at < '{before:%Y-%m-%d %H:%M:%S}" in where


def test_other_filters_leave_the_creation_time_unbounded() -> None:
    assert "created_at <" not in _where({"completed_from": "2026-11-03T11:00:00Z"})
    assert "created_at <" not in _where({"handler": "mail.send"})
