"""Five-field cron expressions (minute hour day-of-month month day-of-week), parsed
strictly and matched against local wall-clock times (docs/orbit/schedules.md).

Each field is `*`, a number, a range `a-b`, a step `*/n`, `a-b/n` or `a/n`, or a comma list
of those; months take `jan`-`dec` and days of the week `sun`-`sat` (0 and 7 are Sunday).
When both day fields are restricted (neither allows every value, as `*` and `*/1` do) a
day matches either of them, as in Vixie cron and croniter; otherwise it must match the
restricted one. `L`, `W`, `#`, `?`, seconds
and `@` macros are refused with a message saying what to write instead."""

from __future__ import annotations

import calendar
from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime, timedelta

from agentcall.orbit.domain.errors import InvalidArgument

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {name: i + 1 for i, name in enumerate(_MONTHS)}),
    ("day of week", 0, 7, {name: i for i, name in enumerate(_DAYS)}),
)
MAX_LENGTH = 200
# Every possible day (a February 29th on a given weekday included) recurs within this span.
_SEARCH_DAYS = 366 * 29


@dataclass(frozen=True, slots=True)
class Cron:
    """A parsed expression: the allowed values of each field, sorted."""

    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]
    months: tuple[int, ...]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # the day-of-month field allows every day (`*`, `*/1`, `1-31`)
    any_weekday: bool  # the day-of-week field allows every day

    def day_matches(self, year: int, month: int, day: int) -> bool:
        by_date = day in self.days
        by_weekday = (calendar.weekday(year, month, day) + 1) % 7 in self.weekdays
        if self.any_day and self.any_weekday:
            return True
        if self.any_day:
            return by_weekday
        if self.any_weekday:
            return by_date
        return by_date or by_weekday

    def next_local(self, start: datetime) -> datetime:
        """The first matching naive local time at or after `start` (rounded up to a whole
        minute)."""
        value = _ceil_minute(start)
        limit = value + timedelta(days=_SEARCH_DAYS)
        while value < limit:
            if value.month not in self.months:
                value = _next_month(value)
            elif not self.day_matches(value.year, value.month, value.day):
                value = datetime(value.year, value.month, value.day) + timedelta(days=1)
            else:
                found = self._time_in_day(value)
                if found is not None:
                    return found
                value = datetime(value.year, value.month, value.day) + timedelta(days=1)
        raise InvalidArgument("the cron expression never matches a date", "spec.cron")

    def _time_in_day(self, value: datetime) -> datetime | None:
        hour_at = bisect_left(self.hours, value.hour)
        if hour_at < len(self.hours) and self.hours[hour_at] == value.hour:
            minute_at = bisect_left(self.minutes, value.minute)
            if minute_at < len(self.minutes):
                return value.replace(minute=self.minutes[minute_at])
            hour_at += 1
        if hour_at < len(self.hours):
            return value.replace(hour=self.hours[hour_at], minute=self.minutes[0])
        return None


def _ceil_minute(value: datetime) -> datetime:
    floor = value.replace(second=0, microsecond=0, tzinfo=None)
    return floor if floor == value.replace(tzinfo=None) else floor + timedelta(minutes=1)


def _next_month(value: datetime) -> datetime:
    if value.month == 12:
        return datetime(value.year + 1, 1, 1)
    return datetime(value.year, value.month + 1, 1)


def parse_cron(text: str) -> Cron:
    """Parse a five-field expression; InvalidArgument names the wrong field."""
    if len(text) > MAX_LENGTH:
        raise InvalidArgument(f"at most {MAX_LENGTH} characters", "spec.cron")
    parts = text.split()
    if text.strip().startswith("@"):
        raise InvalidArgument("write the five fields (0 0 * * * for @daily)", "spec.cron")
    if len(parts) != 5:
        raise InvalidArgument(
            f"needs 5 fields (minute hour day month weekday), got {len(parts)}", "spec.cron"
        )
    values = [_field(part, *spec) for part, spec in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(0 if day == 7 else day for day in values[4])
    minutes, hours, days, months = (tuple(sorted(field)) for field in values[:4])
    cron = Cron(
        " ".join(parts),
        minutes,
        hours,
        days,
        months,
        weekdays,
        len(values[2]) == 31,
        len(weekdays) == 7,
    )
    _check_feasible(cron)
    return cron


def _field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    found: set[int] = set()
    for item in text.split(","):
        found |= _item(item.lower(), name, low, high, names)
    return found


def _item(item: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    base, slash, step_text = item.partition("/")
    step = _number(step_text, name, 1, high - low + 1) if slash else 1
    if base == "*":
        first, last = low, high
    elif "-" in base:
        left, _, right = base.partition("-")
        first, last = _value(left, name, low, high, names), _value(right, name, low, high, names)
        if first > last:
            raise InvalidArgument(f"{name}: range {base} runs backwards", "spec.cron")
    else:
        first = _value(base, name, low, high, names)
        last = high if slash else first
    return set(range(first, last + 1, step))


def _value(text: str, name: str, low: int, high: int, names: dict[str, int]) -> int:
    if text in names:
        return names[text]
    return _number(text, name, low, high)


def _number(text: str, name: str, low: int, high: int) -> int:
    if not text.isascii() or not text.isdigit():
        hint = "L, W, # and ? are not supported; " if text[-1:] in "lw?" or "#" in text else ""
        raise InvalidArgument(f"{name}: {hint}{text!r} is not a number", "spec.cron")
    value = int(text)
    if not low <= value <= high:
        raise InvalidArgument(f"{name}: {value} is outside {low}-{high}", "spec.cron")
    return value


def _check_feasible(cron: Cron) -> None:
    if not cron.any_day and not cron.any_weekday:
        return  # either day field can match: every month has every weekday
    if cron.any_day:
        return
    longest = {month: calendar.monthrange(2000, month)[1] for month in cron.months}
    if not any(day <= longest[month] for month in cron.months for day in cron.days):
        raise InvalidArgument("the cron expression never matches a date", "spec.cron")
