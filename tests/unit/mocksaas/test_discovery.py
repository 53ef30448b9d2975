"""Task discovery v0.3: cursor rules and page assembly (D-DISC-1..3)."""

from __future__ import annotations

import pytest

from agentcall.mocksaas.contracts import Contracts
from agentcall.mocksaas.domain.discovery import (
    MAX_PAGE_SIZE,
    TaskRecord,
    build_page,
    check_page_size,
    parse_cursor,
    select_latest,
)
from agentcall.mocksaas.errors import InvalidCursor, InvalidRequest
from tests.unit.mocksaas.conftest import D


@pytest.mark.parametrize(
    ("raw", "head", "expected"),
    [("0", 0, 0), ("0", 9, 0), ("7", 7, 7), ("1", 600, 1), (str(2**64 - 1), 2**64 - 1, 2**64 - 1)],
)
def test_d_disc_1_canonical_cursor_accepted(raw: str, head: int, expected: int) -> None:
    assert parse_cursor(raw, head) == expected


@pytest.mark.parametrize(
    ("raw", "head"),
    [
        ("007", 10),
        ("00", 10),
        ("-1", 10),
        ("abc", 10),
        ("", 10),
        (None, 10),
        (str(2**64), 2**65),
        ("11", 10),
        ("1", 0),
        (" 1", 10),
        ("1 ", 10),
        ("+1", 10),
        ("1.0", 10),
        ("1e3", 5000),
        ("\u0663", 10),
        ("0x1", 10),
    ],
)
def test_d_disc_9_invalid_cursor(raw: str | None, head: int) -> None:
    with pytest.raises(InvalidCursor):
        parse_cursor(raw, head)


def rec(event_id: int, task: str, status: str = "running", rev: int = 1) -> TaskRecord:
    return TaskRecord(event_id, task, "tenant-a", "tenant-a", status, rev)


def test_d_disc_3_empty_page_keeps_cursor(contracts: Contracts) -> None:
    page = build_page(D, 42, [])
    assert page["tasks"] == [] and page["next_cursor"] == "42"
    assert contracts.is_valid("task-discovery.page", page)


def test_d_disc_3_next_cursor_is_last_returned_event(contracts: Contracts) -> None:
    page = build_page(D, 3, [rec(9, "b"), rec(5, "a")])
    assert [t["task_id"] for t in page["tasks"]] == ["a", "b"]
    assert page["next_cursor"] == "9"
    assert set(page["tasks"][0]) == {
        "task_id",
        "tenant_id",
        "tenant_key",
        "status",
        "task_revision",
    }
    assert contracts.is_valid("task-discovery.page", page)


def test_build_page_refuses_records_at_or_before_cursor() -> None:
    with pytest.raises(ValueError):
        build_page(D, 5, [rec(5, "a")])


LOG = [
    rec(1, "a"),
    rec(2, "b"),
    rec(3, "a", "paused", 2),
    rec(4, "c"),
    rec(5, "b", "stopped", 2),
    rec(6, "b", "removed", 3),
]


@pytest.mark.parametrize(
    ("after", "limit", "expected"),
    [
        (0, 10, [(3, "a"), (4, "c"), (6, "b")]),
        (0, 2, [(3, "a"), (4, "c")]),
        (4, 10, [(6, "b")]),
        (3, 1, [(4, "c")]),
        (6, 10, []),
    ],
)
def test_d_disc_2_latest_record_per_task_in_event_order(
    after: int, limit: int, expected: list[tuple[int, str]]
) -> None:
    got = select_latest(LOG, after, limit)
    assert [(r.event_id, r.task_id) for r in got] == expected


@pytest.mark.parametrize("size", [1, 17, MAX_PAGE_SIZE])
def test_page_size_in_range(size: int) -> None:
    assert check_page_size(size) == size


@pytest.mark.parametrize("size", [0, -1, MAX_PAGE_SIZE + 1, "10", True, 2.5])
def test_page_size_out_of_range(size: object) -> None:
    with pytest.raises(InvalidRequest):
        check_page_size(size)
