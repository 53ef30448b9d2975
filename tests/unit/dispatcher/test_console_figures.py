"""The console's figures (pure): 5-minute outcome buckets over 6 hours, histogram bins, the
last hour of admission decisions, active calls against limits, discovery lag, call quality,
the SVG geometry, and who may read (bearer token or basic-auth password)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentcall.dispatcher.console import aggregate, auth, chart

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 1, 12, 7, 30, tzinfo=UTC)
M = timedelta(minutes=1)


@pytest.mark.parametrize(
    ("moment", "start"),
    [
        (datetime(2026, 12, 1, 12, 7, 30, tzinfo=UTC), datetime(2026, 12, 1, 12, 5, tzinfo=UTC)),
        (datetime(2026, 12, 1, 12, 5, tzinfo=UTC), datetime(2026, 12, 1, 12, 5, tzinfo=UTC)),
        (
            datetime(2026, 12, 1, 12, 4, 59, 999999, tzinfo=UTC),
            datetime(2026, 12, 1, 12, 0, tzinfo=UTC),
        ),
        (datetime(2026, 12, 1, 0, 0, tzinfo=UTC), datetime(2026, 12, 1, 0, 0, tzinfo=UTC)),
    ],
)
def test_bucket_start_is_aligned_to_five_minutes(moment: datetime, start: datetime) -> None:
    assert aggregate.bucket_start(moment) == start


@pytest.mark.parametrize(
    ("ends", "expected"),
    [
        ([], {}),
        ([(NOW, "answered", 1)], {71: {"answered": 1}}),
        (
            [(NOW - 3 * M, "busy", 1), (NOW - 2 * M, "busy", 1)],
            {70: {"busy": 1}, 71: {"busy": 1}},
        ),  # 12:04:30 and 12:05:30
        ([(NOW - 2 * M, "busy", 1), (NOW - M, "busy", 3)], {71: {"busy": 4}}),
        ([(NOW - timedelta(hours=5, minutes=55), "failed", 2)], {0: {"failed": 2}}),
        ([(NOW - timedelta(hours=6), "failed", 1)], {}),  # before the window
        ([(NOW + 5 * M, "answered", 1)], {}),  # after now's bucket
        (
            [(NOW, "answered", 1), (NOW, "no_answer", 1), (NOW, "answered", 1)],
            {71: {"answered": 2, "no_answer": 1}},
        ),
    ],
)
def test_outcome_buckets(ends: list[tuple[datetime, str, int]], expected: dict[int, Any]) -> None:
    buckets = aggregate.outcome_buckets(ends, NOW)
    assert len(buckets) == 72
    assert buckets[-1].start == datetime(2026, 12, 1, 12, 5, tzinfo=UTC)
    assert buckets[0].start == datetime(2026, 12, 1, 6, 10, tzinfo=UTC)
    assert {i: b.counts for i, b in enumerate(buckets) if b.counts} == expected


@pytest.mark.parametrize(
    ("values", "counts"),
    [
        ([], [0, 0, 0]),
        ([(0.0, 1), (0.5, 1)], [2, 0, 0]),
        ([(1.0, 1)], [0, 1, 0]),  # a value on an edge belongs to the bin it opens
        ([(9.99, 1), (10.0, 1), (1e9, 1)], [0, 1, 2]),
        ([(-1.0, 1)], [1, 0, 0]),  # below the first edge: the first bin
        ([(3.0, 7), (0.0, 0)], [0, 7, 0]),  # counted as many times as it stands for
    ],
)
def test_histogram_bins(values: list[tuple[float, int]], counts: list[int]) -> None:
    bins = aggregate.histogram(values, (0.0, 1.0, 10.0))
    assert [b.count for b in bins] == counts
    assert [(b.low, b.high) for b in bins] == [(0.0, 1.0), (1.0, 10.0), (10.0, None)]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([], {}),
        ([("t1", "accepted", None, 3)], {"t1": {"accepted": 3}}),
        (
            [
                ("t1", "rejected", "task_concurrency_exhausted", 2),
                ("t1", "accepted", None, 1),
                ("t2", "discarded_stopped", None, 1),
            ],
            {
                "t1": {"accepted": 1, "task_concurrency_exhausted": 2},
                "t2": {"discarded_stopped": 1},
            },
        ),
        ([("t1", "rejected", None, 1)], {"t1": {"rejected": 1}}),  # no reason recorded
    ],
)
def test_admissions_by_reason(
    rows: list[tuple[str, str, str | None, int]], expected: dict[str, dict[str, int]]
) -> None:
    assert aggregate.admissions(rows) == expected


@pytest.mark.parametrize(
    ("active", "limits", "rows"),
    [
        ({}, {}, []),
        ({"tasks": {"t1": 2}}, {"tasks": {"t1": 5}}, [("task", "t1", 2, 5, False, 40)]),
        ({"tasks": {"t1": 5}}, {"tasks": {"t1": 5}}, [("task", "t1", 5, 5, True, 100)]),
        ({"tenants": {"a": 1}}, {}, [("tenant", "a", 1, None, False, 0)]),
        ({}, {"trunks": {"k": None}}, [("trunk", "k", 0, None, False, 0)]),
        ({"trunks": {"k": 1}}, {"trunks": {"k": 0}}, [("trunk", "k", 1, 0, True, 100)]),
        (
            {"tenants": {"a": 1}, "tasks": {"t": 1}, "trunks": {"k": 1}},
            {"tenants": {"a": 4}, "tasks": {"t": 2}, "trunks": {"k": 3}},
            [
                ("tenant", "a", 1, 4, False, 25),
                ("task", "t", 1, 2, False, 50),
                ("trunk", "k", 1, 3, False, 33),
            ],
        ),
    ],
)
def test_active_calls_against_each_limit(
    active: dict[str, dict[str, int]], limits: dict[str, Any], rows: list[tuple[Any, ...]]
) -> None:
    found = aggregate.usage(active, limits)
    assert [(u.scope, u.key, u.active, u.limit, u.full, u.percent) for u in found] == rows


@pytest.mark.parametrize(
    ("caught_up", "at", "lag"),
    [
        (True, None, 0.0),
        (False, None, None),
        (False, NOW - 90 * timedelta(seconds=1), 90.0),
        (False, NOW + M, 0.0),
    ],
)
def test_discovery_lag(caught_up: bool, at: datetime | None, lag: float | None) -> None:
    assert aggregate.lag_seconds(NOW, caught_up, at) == lag


def test_quality_distribution_from_the_ends_that_carry_rtp_figures() -> None:
    figures: list[tuple[Any, Any, int]] = [
        (None, None, 40),  # calls without media figures
        (0.0, 3, 1),
        (0.03, 42, 1),
        ("bad", 150, 1),
        (True, None, 1),  # not a number
    ]
    found = aggregate.quality(figures)
    assert found["calls"] == 3
    assert [b.count for b in found["loss"]] == [1, 0, 0, 1, 0, 0]
    assert [b.count for b in found["jitter_ms"]] == [1, 0, 0, 0, 1, 0, 1]


def test_outcome_chart_stacks_each_bucket_in_contract_order() -> None:
    ends = [(NOW, "no_answer", 1), (NOW, "answered", 2), (NOW - 10 * M, "odd", 1)]
    drawn = chart.outcomes_chart(aggregate.outcome_buckets(ends, NOW))
    assert drawn.peak == 3 and drawn.total == 4
    assert drawn.totals == {"answered": 2, "no_answer": 1, "odd": 1}
    last = [b for b in drawn.bars if b.x == drawn.bars[-1].x]
    assert [b.kind for b in last] == ["answered", "no_answer"]
    assert last[0].y + last[0].height == chart.HEIGHT  # answered at the bottom
    assert last[1].y + last[1].height == pytest.approx(last[0].y)
    assert sum(b.height for b in last) == pytest.approx(chart.HEIGHT - 10)  # the peak fills
    assert "2 answered, 1 no_answer" in last[0].title
    # 12:00 falls too close to the right edge to be labelled
    assert [text for _, text in drawn.labels] == [f"{h:02d}:00" for h in range(7, 12)]


def test_empty_charts_draw_no_bar() -> None:
    assert chart.outcomes_chart(aggregate.outcome_buckets([], NOW)).bars == []
    assert chart.bins_chart(aggregate.histogram([], (0.0, 1.0))).bars == []


def test_bins_chart_titles_name_the_span() -> None:
    drawn = chart.bins_chart(aggregate.histogram([(0.5, 1), (12.0, 1)], (0.0, 1.0, 10.0)), " s")
    assert [b.title for b in drawn.bars] == ["0 s < 1 s: 1", "10 s and more: 1"]


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


TOKEN = "a-console-token-0123"


@pytest.mark.parametrize(
    ("token", "header", "ok"),
    [
        (None, None, True),  # loopback bind, no token set
        (None, "Bearer anything", True),
        (TOKEN, None, False),
        (TOKEN, f"Bearer {TOKEN}", True),
        (TOKEN, f"bearer   {TOKEN} ", True),
        (TOKEN, f"Bearer {TOKEN}x", False),
        (TOKEN, "Bearer ", False),
        (TOKEN, _basic("ops", TOKEN), True),
        (TOKEN, _basic("", TOKEN), True),
        (TOKEN, _basic("ops", "wrong"), False),
        (TOKEN, "Basic not-base64!", False),
        (TOKEN, "Basic " + base64.b64encode(TOKEN.encode()).decode(), False),  # no colon
        (TOKEN, f"Token {TOKEN}", False),
    ],
)
def test_who_may_read(token: str | None, header: str | None, ok: bool) -> None:
    assert auth.allowed(token, header) is ok
