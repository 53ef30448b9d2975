"""The hot path's row binding: times as naive UTC whatever their zone (a group's repeated
times converted once), values in statement order, NULL-in-every-row columns left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from agentcall.orbit.domain.times import as_utc, to_naive_utc
from agentcall.orbit.store.mysql import _bound_rows
from agentcall.orbit.store.tables import task_events

pytestmark = pytest.mark.unit

T = datetime(2026, 12, 1, 8, 0, 0, 500, tzinfo=UTC)
PLUS2 = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("value", "naive"),
    [
        (T, T.replace(tzinfo=None)),
        (T.replace(tzinfo=None), T.replace(tzinfo=None)),  # naive: UTC by convention
        (T.astimezone(PLUS2), T.replace(tzinfo=None)),
        (datetime(2026, 1, 1, 1, tzinfo=PLUS2), datetime(2025, 12, 31, 23)),
    ],
)
def test_to_naive_utc(value: datetime, naive: datetime) -> None:
    assert to_naive_utc(value) == naive and to_naive_utc(value).tzinfo is None
    assert as_utc(value) == naive.replace(tzinfo=UTC) and as_utc(value).tzinfo is UTC


def test_bound_rows_convert_each_time_and_keep_order() -> None:
    """Equal instants in different zones, naive times and NULLs, repeated across rows."""
    other = T + timedelta(seconds=1)
    rows: list[dict[str, Any]] = [
        {"id": "a", "task_id": "t", "revision": 1, "created_at": T},
        {"id": "b", "task_id": "t", "revision": 2, "created_at": T.astimezone(PLUS2)},
        {"id": "c", "task_id": "u", "revision": 3, "created_at": other.replace(tzinfo=None)},
        {"id": "d", "task_id": "u", "revision": 4, "created_at": None},
        {"id": "e", "task_id": "u", "revision": 5, "created_at": other},
    ]
    names = ("created_at", "id", "revision")
    assert _bound_rows(task_events, names, rows) == [
        [to_naive_utc(row["created_at"]) if row["created_at"] else None, row["id"], row["revision"]]
        for row in rows
    ]
