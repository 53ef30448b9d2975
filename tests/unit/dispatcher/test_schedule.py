"""Schedule windows in IANA zones (D-CMD-2): [start,end), excluded dates first, DST-correct."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from agentcall.dispatcher.domain.model import Schedule, Window
from agentcall.dispatcher.domain.schedule import Closed, closed_reason, parse_hhmm
from tests.support.dispatcher_factories import schedule

NINE_TO_SIX = Schedule("Asia/Shanghai", ((Window(540, 1080),),) * 5 + ((), ()))
NY_SUNDAY_2AM = Schedule("America/New_York", ((),) * 6 + ((Window(120, 150),),))
NY_SUNDAY_1AM = Schedule("America/New_York", ((),) * 6 + ((Window(60, 120),),))
NY_WEEKDAY_9AM = Schedule("America/New_York", ((Window(540, 600),),) * 5 + ((), ()))
LATE = Schedule("Asia/Shanghai", ((Window(1380, 1440),),) * 7)
ALL_DAY_EXCLUDED = Schedule(
    "Asia/Shanghai", ((Window(0, 1440),),) * 7, excluded_dates=frozenset({date(2026, 10, 1)})
)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


CASES = [
    ("start is inclusive", NINE_TO_SIX, utc(2026, 9, 21, 1, 0), None),
    ("inside", NINE_TO_SIX, utc(2026, 9, 21, 2, 0), None),
    ("before start", NINE_TO_SIX, utc(2026, 9, 21, 0, 59, 59), Closed.OUTSIDE_WINDOWS),
    ("end is exclusive", NINE_TO_SIX, utc(2026, 9, 21, 10, 0), Closed.OUTSIDE_WINDOWS),
    ("empty day forbids calls", NINE_TO_SIX, utc(2026, 9, 26, 2, 0), Closed.OUTSIDE_WINDOWS),
    ("24:00 ends the day", LATE, utc(2026, 9, 21, 15, 59, 59), None),
    (
        "excluded date wins over windows",
        schedule(excluded_dates=frozenset({date(2026, 10, 1)})),
        utc(2026, 10, 1, 2, 0),
        Closed.EXCLUDED_DATE,
    ),
    (
        "excluded date is the local date, not UTC",
        ALL_DAY_EXCLUDED,
        utc(2026, 9, 30, 16, 30),
        Closed.EXCLUDED_DATE,
    ),
    ("day before exclusion is open", ALL_DAY_EXCLUDED, utc(2026, 9, 30, 15, 59), None),
    (
        "before starts_at",
        schedule(starts_at=utc(2026, 9, 21, 3, 0)),
        utc(2026, 9, 21, 2, 59),
        Closed.NOT_STARTED,
    ),
    ("at starts_at", schedule(starts_at=utc(2026, 9, 21, 2, 0)), utc(2026, 9, 21, 2, 0), None),
    (
        "at ends_at (exclusive)",
        schedule(ends_at=utc(2026, 9, 21, 2, 0)),
        utc(2026, 9, 21, 2, 0),
        Closed.ENDED,
    ),
    ("before ends_at", schedule(ends_at=utc(2026, 9, 21, 2, 1)), utc(2026, 9, 21, 2, 0), None),
    # DST, America/New_York: spring forward 2026-03-08 02:00 -> 03:00.
    (
        "skipped hour: just before",
        NY_SUNDAY_2AM,
        utc(2026, 3, 8, 6, 59, 59),
        Closed.OUTSIDE_WINDOWS,
    ),
    ("skipped hour never opens", NY_SUNDAY_2AM, utc(2026, 3, 8, 7, 0), Closed.OUTSIDE_WINDOWS),
    ("same window opens a week later", NY_SUNDAY_2AM, utc(2026, 3, 15, 6, 15), None),
    ("EST 09:30 is 14:30Z", NY_WEEKDAY_9AM, utc(2026, 3, 6, 14, 30), None),
    ("EDT 09:30 is 13:30Z", NY_WEEKDAY_9AM, utc(2026, 3, 9, 13, 30), None),
    ("EDT 10:30 is closed", NY_WEEKDAY_9AM, utc(2026, 3, 9, 14, 30), Closed.OUTSIDE_WINDOWS),
    # Fall back 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 happens twice, both inside.
    ("repeated hour, first pass", NY_SUNDAY_1AM, utc(2026, 11, 1, 5, 30), None),
    ("repeated hour, second pass", NY_SUNDAY_1AM, utc(2026, 11, 1, 6, 30), None),
    ("after repeated hour", NY_SUNDAY_1AM, utc(2026, 11, 1, 7, 0), Closed.OUTSIDE_WINDOWS),
]


@pytest.mark.parametrize(("name", "sched", "now", "expected"), CASES, ids=[c[0] for c in CASES])
def test_schedule_window_d_cmd_2(
    name: str, sched: Schedule, now: datetime, expected: Closed | None
) -> None:
    assert closed_reason(sched, now) == expected


@pytest.mark.parametrize(("text", "minutes"), [("00:00", 0), ("09:30", 570), ("24:00", 1440)])
def test_parse_hhmm(text: str, minutes: int) -> None:
    assert parse_hhmm(text) == minutes
