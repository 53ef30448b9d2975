"""Schedule windows in IANA time zones (D-CMD-2).

A schedule is open at ``now`` when, in this order: ``starts_at <= now < ends_at`` (each
bound optional), the local date is not an excluded date (exclusions win over windows), and
the local wall-clock time falls in one of that weekday's ``[start, end)`` windows. Local
time comes from :mod:`zoneinfo`, so DST gaps and repeats follow the wall clock: a window
inside a skipped hour never opens that day, a repeated hour is inside its window twice.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from zoneinfo import ZoneInfo

from agentcall.dispatcher.domain.model import Schedule, Window


class Closed(StrEnum):
    """Why a schedule is closed at a given instant (for logs and tests)."""

    NOT_STARTED = "not_started"
    ENDED = "ended"
    EXCLUDED_DATE = "excluded_date"
    OUTSIDE_WINDOWS = "outside_windows"


@lru_cache(maxsize=256)
def zone(name: str) -> ZoneInfo:
    """Cached zone lookup; an unknown name raises ``ZoneInfoNotFoundError`` (a ``KeyError``)."""
    return ZoneInfo(name)


def parse_hhmm(text: str) -> int:
    """``"09:30"`` → 570 minutes; ``"24:00"`` → 1440 (end of day)."""
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def closed_reason(schedule: Schedule, now: datetime) -> Closed | None:
    """None when open at ``now`` (an aware datetime), else the first reason it is closed."""
    if schedule.starts_at is not None and now < schedule.starts_at:
        return Closed.NOT_STARTED
    if schedule.ends_at is not None and now >= schedule.ends_at:
        return Closed.ENDED
    local = now.astimezone(zone(schedule.time_zone))
    if local.date() in schedule.excluded_dates:
        return Closed.EXCLUDED_DATE
    minute = local.hour * 60 + local.minute + (local.second + local.microsecond / 1e6) / 60
    if any(_inside(window, minute) for window in schedule.weekly[local.weekday()]):
        return None
    return Closed.OUTSIDE_WINDOWS


def is_open(schedule: Schedule, now: datetime) -> bool:
    return closed_reason(schedule, now) is None


def _inside(window: Window, minute: float) -> bool:
    return window.start_min <= minute < window.end_min
