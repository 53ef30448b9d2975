"""Schedule slots (docs/orbit/schedules.md): five-field cron in an IANA zone and intervals
from an anchor; DST gaps fire once at the gap's end, repeated hours fire once; the
cron matching agrees with croniter on random expressions away from DST changes."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentcall.orbit.domain.cron import parse_cron
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.schedules import (
    cron_spec,
    interval_spec,
    next_slot,
    parse_zone,
    slots,
)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def local(zone: str, *parts: int) -> datetime:
    return datetime(*parts, tzinfo=ZoneInfo(zone)).astimezone(UTC)  # type: ignore[misc]


def first(spec_text: str, zone: str, after: datetime, count: int) -> list[datetime]:
    return list(islice(slots(cron_spec(spec_text, zone), after), count))


@pytest.mark.parametrize(
    ("cron", "after", "expected"),
    [
        ("*/7 * * * *", utc(2026, 1, 1, 10, 55), [utc(2026, 1, 1, 10, 56), utc(2026, 1, 1, 11, 0)]),
        ("0 0 29 2 *", utc(2026, 1, 1), [utc(2028, 2, 29), utc(2032, 2, 29)]),
        ("0 12 31 * *", utc(2026, 4, 1), [utc(2026, 5, 31, 12), utc(2026, 7, 31, 12)]),
        ("0 9 * * mon-fri", utc(2026, 12, 4, 10), [utc(2026, 12, 7, 9), utc(2026, 12, 8, 9)]),
        ("0 0 1 * 7", utc(2026, 11, 30), [utc(2026, 12, 1), utc(2026, 12, 6)]),
        ("15 10 * jan,jul *", utc(2026, 7, 31, 10, 15), [utc(2027, 1, 1, 10, 15)]),
        ("0 0 * * *", utc(2026, 12, 31, 23, 59, 59), [utc(2027, 1, 1)]),
        ("5-10/5 1 * * *", utc(2026, 1, 1), [utc(2026, 1, 1, 1, 5), utc(2026, 1, 1, 1, 10)]),
        ("0 6-6 * * *", utc(2026, 1, 1), [utc(2026, 1, 1, 6), utc(2026, 1, 2, 6)]),
        ("0 0 * * 2-2/3", utc(2026, 1, 1), [utc(2026, 1, 6), utc(2026, 1, 13)]),
        ("0 0 */1 * 1", utc(2026, 1, 1), [utc(2026, 1, 5), utc(2026, 1, 12)]),
        ("0 0 13 * 5", utc(2026, 2, 1), [utc(2026, 2, 6), utc(2026, 2, 13)]),
    ],
)
def test_cron_slots_in_utc_cover_steps_leap_days_month_ends_and_weekdays(
    cron: str, after: datetime, expected: list[datetime]
) -> None:
    assert first(cron, "UTC", after, len(expected)) == expected


def test_a_daily_slot_inside_a_spring_forward_gap_fires_once_at_the_gap_end() -> None:
    found = first("30 2 * * *", "Europe/Berlin", local("Europe/Berlin", 2026, 3, 28, 12), 3)
    assert found == [
        local("Europe/Berlin", 2026, 3, 29, 3, 0),
        local("Europe/Berlin", 2026, 3, 30, 2, 30),
        local("Europe/Berlin", 2026, 3, 31, 2, 30),
    ]


def test_every_skipped_minute_of_a_gap_collapses_into_one_firing() -> None:
    found = first("*/15 2 * * *", "America/New_York", utc(2026, 3, 8, 5), 2)
    assert found == [
        local("America/New_York", 2026, 3, 8, 3),
        local("America/New_York", 2026, 3, 9, 2),
    ]


def test_a_slot_in_a_repeated_hour_fires_once_at_its_first_occurrence() -> None:
    found = first("30 1 * * *", "America/New_York", utc(2026, 11, 1, 0), 2)
    assert found == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


def test_minutely_slots_through_a_repeated_hour_are_each_fired_once() -> None:
    found = first("*/30 * * * *", "Europe/Berlin", utc(2026, 10, 24, 23, 59), 6)
    assert found == [
        utc(2026, 10, 25, 0, 0),  # 02:00 CEST
        utc(2026, 10, 25, 0, 30),  # 02:30 CEST; the second 02:00 and 02:30 (CET) do not fire
        utc(2026, 10, 25, 2, 0),  # 03:00 CET
        utc(2026, 10, 25, 2, 30),
        utc(2026, 10, 25, 3, 0),
        utc(2026, 10, 25, 3, 30),
    ]


def test_a_half_hour_zone_and_a_whole_day_gap_are_followed() -> None:
    assert first("0 0 * * *", "Asia/Kolkata", utc(2026, 1, 1), 1) == [utc(2026, 1, 1, 18, 30)]
    # Samoa skipped 30 December 2011: the midnight slot of that day fires at the gap's end.
    found = first("0 12 * * *", "Pacific/Apia", utc(2011, 12, 29, 0), 2)
    assert found == [
        local("Pacific/Apia", 2011, 12, 29, 12),
        local("Pacific/Apia", 2011, 12, 31, 0),
    ]


def test_interval_slots_count_from_the_anchor() -> None:
    spec = interval_spec(90_000, utc(2026, 1, 1, 0, 0, 30))
    assert next_slot(spec, utc(2025, 1, 1)) == utc(2026, 1, 1, 0, 0, 30)
    assert next_slot(spec, utc(2026, 1, 1, 0, 0, 30)) == utc(2026, 1, 1, 0, 2)
    assert next_slot(spec, utc(2026, 1, 1, 0, 3, 29)) == utc(2026, 1, 1, 0, 3, 30)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("* * * *", "needs 5 fields"),
        ("60 * * * *", "minute: 60 is outside 0-59"),
        ("0 0 L * *", "L, W, # and ? are not supported"),
        ("0 0 30 2 *", "never matches"),
        ("5-1 * * * *", "runs backwards"),
        ("@daily", "0 0 * * *"),
        ("*/0 * * * *", "outside"),
    ],
)
def test_a_wrong_cron_expression_is_refused_with_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(says)):
        parse_cron(text)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", "", "Europe/"])
def test_an_unknown_time_zone_is_refused(zone: str) -> None:
    with pytest.raises(InvalidArgument, match="time zone"):
        parse_zone(zone)


def test_an_interval_shorter_than_a_second_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="spec.interval_ms"):
        interval_spec(999, utc(2026, 1, 1))


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    number = st.integers(low, high)
    single = number.map(str)
    # croniter reads a one-value range (6-6) as `*`; POSIX and Orbit read it as 6 (see the
    # table above), so the comparison draws ranges of two values or more.
    span = st.tuples(number, number).filter(lambda p: p[0] != p[1])
    span = span.map(lambda p: f"{min(p)}-{max(p)}")
    step = st.tuples(st.sampled_from(["*"]) | span, st.integers(1, 12)).map(
        lambda p: f"{p[0]}/{p[1]}"
    )
    item = single | span | step
    return st.just("*") | st.lists(item, min_size=1, max_size=3).map(",".join)


CRONS = st.tuples(
    _field(0, 59), _field(0, 23), _field(1, 28) | _field(1, 31), _field(1, 12), _field(0, 6)
).map(" ".join)
ZONES = st.sampled_from(
    ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
)
STARTS = st.datetimes(datetime(2001, 1, 1), datetime(2090, 1, 1)).map(
    lambda value: value.replace(tzinfo=UTC)
)


def _near_offset_change(zone: ZoneInfo, instant: datetime) -> bool:
    return (instant - timedelta(days=2)).astimezone(zone).utcoffset() != (
        instant + timedelta(days=2)
    ).astimezone(zone).utcoffset()


@settings(max_examples=300, deadline=None)
@given(CRONS, ZONES, STARTS)
def test_cron_slots_agree_with_croniter_away_from_offset_changes(
    text: str, zone_name: str, start: datetime
) -> None:
    try:
        spec = cron_spec(text, zone_name)
    except InvalidArgument:
        return  # never matches (e.g. 31 in a 30-day month list)
    fields = text.split()
    # croniter decides whether a day field is restricted from its spelling in ways that
    # vary (`*/1` sometimes is, `0-6` always is); Orbit looks at the days it allows.
    # Compare only where the two readings agree: a day field is `*` or leaves days out.
    assume(fields[2] == "*" or not spec.cron.any_day)
    assume(fields[4] == "*" or not spec.cron.any_weekday)
    zone = ZoneInfo(zone_name)
    reference = croniter(text, start.astimezone(zone))
    for ours in islice(slots(spec, start), 5):
        theirs = reference.get_next(datetime).astimezone(UTC)
        if _near_offset_change(zone, ours) or _near_offset_change(zone, theirs):
            return
        assert ours == theirs


@settings(max_examples=200, deadline=None)
@given(CRONS, ZONES, STARTS)
def test_cron_slots_strictly_increase_and_match_their_wall_clock_fields(
    text: str, zone_name: str, start: datetime
) -> None:
    try:
        spec = cron_spec(text, zone_name)
    except InvalidArgument:
        return
    previous = start
    for slot in islice(slots(spec, start), 8):
        assert slot > previous
        wall = slot.astimezone(ZoneInfo(zone_name))
        if not _near_offset_change(ZoneInfo(zone_name), slot):
            assert wall.minute in spec.cron.minutes and wall.hour in spec.cron.hours
            assert spec.cron.day_matches(wall.year, wall.month, wall.day)
        previous = slot


@settings(max_examples=200, deadline=None)
@given(st.integers(1000, 86_400_000), STARTS, STARTS)
def test_interval_slots_are_anchor_plus_whole_steps_and_the_first_after(
    interval_ms: int, anchor: datetime, after: datetime
) -> None:
    spec = interval_spec(interval_ms, anchor)
    slot = next_slot(spec, after)
    assert slot > after and slot >= anchor
    assert (slot - anchor) % timedelta(milliseconds=interval_ms) == timedelta(0)
    if after < anchor:
        assert slot == anchor
    else:
        assert slot - timedelta(milliseconds=interval_ms) <= after
