"""The store's statements as written once (`agentcall.orbit.store.sql`, `queries.sql`): one UPDATE
per batch whatever its size, per-row values as CASE, conditions and increments as written; named
queries with list parameters expanded, row lists and locks as each dialect wants them; times
bound as naive UTC and read back aware UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite as sqlite_dialect

from agentcall.orbit.store import mysql, sqlite
from agentcall.orbit.store.sql import (
    QUERIES,
    Increment,
    Update,
    compile_query,
    layout,
    update_statement,
)
from agentcall.orbit.store.tables import metadata

pytestmark = pytest.mark.unit
T = sa.Table("t", sa.MetaData(), sa.Column("id", sa.String(32), primary_key=True))


@pytest.mark.parametrize(
    ("rows", "where", "static", "sql", "values"),
    [
        (
            [{"id": "a"}],
            {"state": "LEASED"},
            {"revision": Increment()},
            "UPDATE t SET revision = revision + 1 WHERE id IN (%s) AND state = %s",
            ["a", "LEASED"],
        ),
        (
            [{"id": "a", "x": 1}, {"id": "b", "x": 1}],
            {},
            {"u": None},
            "UPDATE t SET x = %s, u = %s WHERE id IN (%s, %s)",
            [1, None, "a", "b"],
        ),
        (
            [{"id": "a", "x": 1}, {"id": "b", "x": 2}],
            {"state": "RUNNING"},
            {"n": Increment(2)},
            "UPDATE t SET x = CASE id WHEN %s THEN %s WHEN %s THEN %s ELSE x END, n = n + 2 "
            "WHERE id IN (%s, %s) AND state = %s",
            ["a", 1, "b", 2, "a", "b", "RUNNING"],
        ),
        (
            [{"id": "a", "x": 1}, {"id": "b"}],
            {},
            {},
            "UPDATE t SET x = CASE id WHEN %s THEN %s ELSE x END WHERE id IN (%s, %s)",
            ["a", 1, "a", "b"],
        ),
    ],
)
def test_bulk_update_sql(
    rows: list[dict[str, Any]],
    where: dict[str, Any],
    static: dict[str, Any],
    sql: str,
    values: list[Any],
) -> None:
    assert update_statement(Update(T, rows, where, static)) == (sql, values)


@pytest.mark.parametrize(
    "pair",
    [
        (1, True),  # equal, yet an int and a bool bind differently
        (1, 1.0),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # a document's key order is kept
        (datetime(2026, 1, 1), datetime(2026, 1, 1, tzinfo=UTC)),
    ],
    ids=["int-bool", "int-float", "dict-order", "naive-aware"],
)
def test_a_column_is_set_once_only_when_every_row_has_the_very_same_value(
    pair: tuple[Any, Any],
) -> None:
    rows = [{"id": "a", "x": pair[0]}, {"id": "b", "x": pair[1]}]
    sql, values = update_statement(Update(T, rows, {}, {}))
    assert sql == (
        "UPDATE t SET x = CASE id WHEN %s THEN %s WHEN %s THEN %s ELSE x END WHERE id IN (%s, %s)"
    )
    assert values == ["a", pair[0], "b", pair[1], "a", "b"]
    same = [{"id": "a", "x": pair[1]}, {"id": "b", "x": pair[1]}]
    assert (
        update_statement(Update(T, same, {}, {}))[0] == "UPDATE t SET x = %s WHERE id IN (%s, %s)"
    )


def test_a_named_query_expands_its_lists_and_fills_its_fragments() -> None:
    params: dict[str, Any] = {"live": ["LEASED", "RUNNING"], "now": 1, "limit": 5}
    on_mysql = compile_query("expired_attempts", layout(params), mysql.FRAGMENTS)
    on_sqlite = compile_query("expired_attempts", layout(params), sqlite.FRAGMENTS)
    assert "a.state IN (%s, %s) AND a.lease_expires_at <= %s" in on_mysql.sql
    assert on_mysql.sql.endswith("LIMIT %s FOR UPDATE SKIP LOCKED")
    assert on_sqlite.sql.endswith("LIMIT ?") and "a.state IN (?, ?)" in on_sqlite.sql
    assert on_mysql.values(params) == on_sqlite.values(params) == ["LEASED", "RUNNING", 1, 5]
    assert "{" not in on_mysql.sql and "t.start_deadline_at" in on_mysql.sql  # fragment filled


def test_row_lists_are_values_on_sqlite_and_a_plain_list_on_mysql() -> None:
    params: dict[str, Any] = {
        "queue_id": "q",
        "waiting": "WAITING",
        "now": 0,
        "handlers": [("h", "1"), ("g", "2")],
        "limit": 3,
    }
    on_mysql = compile_query("lease_candidates", layout(params), mysql.FRAGMENTS)
    on_sqlite = compile_query("lease_candidates", layout(params), sqlite.FRAGMENTS)
    assert "(handler, handler_version) IN ((%s, %s), (%s, %s))" in on_mysql.sql
    assert "(handler, handler_version) IN (VALUES (?, ?), (?, ?))" in on_sqlite.sql
    assert on_mysql.values(params) == ["q", "WAITING", 0, 0, 0, "h", "1", "g", "2", 3]


def test_every_named_query_compiles_for_both_dialects() -> None:
    """Every `:name` is bound and every `{fragment}` filled; the SQL names only tables of the
    schema."""
    for name, text in QUERIES.items():
        if not text.upper().startswith(("SELECT", "UPDATE")):
            continue  # a fragment of other queries
        params = {
            param: [1, 2]
            if param in ("ids", "live", "keys", "namespaces")
            else [(1, 2)]
            if param == "handlers"
            else 1
            for param in _params(text)
        }
        for fragments in (mysql.FRAGMENTS, sqlite.FRAGMENTS):
            compiled = compile_query(name, layout(params), fragments)
            assert "{" not in compiled.sql, name
            assert len(compiled.values(params)) == compiled.sql.count(fragments.mark), name
        for word in ("FROM", "UPDATE", "JOIN"):
            for rest in text.split(f"{word} ")[1:]:
                table = rest.split()[0]
                assert table in metadata.tables or table.startswith("("), (name, table)


def _params(text: str) -> set[str]:
    return set(re.findall(r"(?<![:\w]):(\w+)", text)) | set(re.findall(r"\{rows:(\w+)\}", text))


@pytest.mark.parametrize(
    ("value", "bound"),
    [
        (datetime(2026, 1, 1, 12, tzinfo=UTC), datetime(2026, 1, 1, 12)),
        (datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))), datetime(2026, 1, 1, 10)),
        ("text", "text"),
        (None, None),
    ],
)
def test_times_are_bound_as_naive_utc(value: object, bound: object) -> None:
    assert mysql._bind(value) == bound


def test_driver_times_come_back_aware_utc() -> None:
    rows = [(datetime(2026, 1, 1, 12), 7, None), (None, 8, datetime(2026, 1, 2))]
    made = mysql.aware_rows(rows, [0, 2], tuple)
    assert made == [
        (datetime(2026, 1, 1, 12, tzinfo=UTC), 7, None),
        (None, 8, datetime(2026, 1, 2, tzinfo=UTC)),
    ]
    assert made[0][0].tzinfo is UTC and made[1][2].tzinfo is UTC


def test_sqlite_stores_times_as_sqlalchemy_does() -> None:
    """Fixed-width UTC text, microseconds always written (the order of the texts is the order
    of the times), the same text SQLAlchemy's SQLite DATETIME writes; read back aware UTC."""
    at = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    stored = sqlite._bind(at)
    assert stored == "2026-01-01 10:00:00.000000"
    dialect = sqlite_dialect.dialect()
    processor = sa.DateTime().dialect_impl(dialect).bind_processor(dialect)
    assert processor is not None and processor(datetime(2026, 1, 1, 10)) == stored
    assert sqlite._time(stored) == at
