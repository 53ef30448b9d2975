"""The plain SQL of the kernel's MySQL/MariaDB hot path (orbit.store.driver, store_mysql):
one statement per batch whatever its size, per-row values as CASE, conditions and increments
as written, and the same select lists as the SQLAlchemy twins."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from agentcall.orbit.store import execution_mysql as store_mysql
from agentcall.orbit.store.driver import Increment, _bind, _result, bulk_update_sql, names_of
from agentcall.orbit.store.execution import _ATTEMPT_COLUMNS

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("rows", "where", "static", "sql", "values"),
    [
        ([{"id": "a"}], {"state": "LEASED"}, {"revision": Increment()},
         "UPDATE t SET revision = revision + 1 WHERE id IN (%s) AND state = %s",
         ["a", "LEASED"]),
        ([{"id": "a", "x": 1}, {"id": "b", "x": 1}], {}, {"u": None},
         "UPDATE t SET x = %s, u = %s WHERE id IN (%s, %s)", [1, None, "a", "b"]),
        ([{"id": "a", "x": 1}, {"id": "b", "x": 2}], {"state": "RUNNING"},
         {"n": Increment(2)},
         "UPDATE t SET x = CASE id WHEN %s THEN %s WHEN %s THEN %s ELSE x END, n = n + 2 "
         "WHERE id IN (%s, %s) AND state = %s", ["a", 1, "b", 2, "a", "b", "RUNNING"]),
        ([{"id": "a", "x": 1}, {"id": "b"}], {}, {},
         "UPDATE t SET x = CASE id WHEN %s THEN %s ELSE x END WHERE id IN (%s, %s)",
         ["a", 1, "a", "b"]),
    ],
)  # fmt: skip
def test_bulk_update_sql(
    rows: list[dict[str, Any]], where: dict[str, Any], static: dict[str, Any], sql: str,
    values: list[Any],
) -> None:  # fmt: skip
    assert bulk_update_sql("t", rows, where, static) == (sql, values)


def test_the_attempt_select_list_matches_the_sqlalchemy_one() -> None:
    """Both paths build LiveAttempt from the same field names."""
    assert store_mysql.ATTEMPT_NAMES == tuple(column.name for column in _ATTEMPT_COLUMNS)
    assert names_of(["a.id", "t.state AS task_state"]) == ("id", "task_state")


@pytest.mark.parametrize(
    ("value", "bound"),
    [
        (datetime(2026, 1, 1, 12, tzinfo=UTC), datetime(2026, 1, 1, 12)),
        (datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))), datetime(2026, 1, 1, 10)),
        ("text", "text"),
        (None, None),
    ],
)  # fmt: skip
def test_times_are_bound_as_naive_utc(value: object, bound: object) -> None:
    assert _bind(value) == bound


def test_driver_times_come_back_aware_utc() -> None:
    assert _result(datetime(2026, 1, 1, 12)) == datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert _result(datetime(2026, 1, 1, 12)).tzinfo is UTC and _result(7) == 7
