"""When a schedule's slots fall (docs/orbit/schedules.md): pure functions over a spec and
UTC instants, `now` passed in.

A spec is a five-field cron in an IANA time zone (`agentcall.orbit.domain.cron`) or a fixed
interval from an anchor. Cron slots follow the zone's wall clock through DST changes:
- a local time the clock skips (02:30 on a spring-forward night) fires once, at the end of
  the gap (03:00 local); several skipped slots of one gap fire once together;
- a local time the clock repeats (01:30 on a fall-back night) fires once, at its first
  occurrence.
Interval slots are `anchor + k * interval` for k >= 0, whatever the zone."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agentcall.orbit.domain.cron import Cron, parse_cron
from agentcall.orbit.domain.errors import InvalidArgument

MIN_INTERVAL_MS = 1000
MAX_INTERVAL_MS = 366 * 86_400_000
_ONE_SECOND = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class CronSpec:
    cron: Cron
    time_zone: str

    @property
    def zone(self) -> ZoneInfo:
        return _zone(self.time_zone)


@dataclass(frozen=True, slots=True)
class IntervalSpec:
    interval_ms: int
    anchor_at: datetime  # UTC

    @property
    def interval(self) -> timedelta:
        return timedelta(milliseconds=self.interval_ms)


Spec = CronSpec | IntervalSpec


@functools.lru_cache(maxsize=512)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def parse_zone(name: str) -> str:
    """Check an IANA zone name (`Europe/Berlin`, `UTC`); InvalidArgument otherwise."""
    if not name or len(name) > 64 or name.startswith(("/", ".")) or ".." in name:
        raise InvalidArgument("must be an IANA time zone such as Europe/Berlin", "spec.time_zone")
    try:
        _zone(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidArgument(f"unknown IANA time zone {name!r}", "spec.time_zone") from None
    return name


def cron_spec(text: str, time_zone: str = "UTC") -> CronSpec:
    return CronSpec(parse_cron(text), parse_zone(time_zone))


def interval_spec(interval_ms: int, anchor_at: datetime) -> IntervalSpec:
    if not MIN_INTERVAL_MS <= interval_ms <= MAX_INTERVAL_MS:
        raise InvalidArgument(
            f"must be {MIN_INTERVAL_MS}-{MAX_INTERVAL_MS} milliseconds", "spec.interval_ms"
        )
    return IntervalSpec(interval_ms, anchor_at.astimezone(UTC))


def next_slot(spec: Spec, after: datetime) -> datetime:
    """The first nominal time strictly after `after` (an aware instant), in UTC."""
    if isinstance(spec, IntervalSpec):
        return _next_interval(spec, after)
    return _next_cron(spec, after)


def slots(spec: Spec, after: datetime) -> Iterator[datetime]:
    """The nominal times strictly after `after`, in order, without end."""
    current = after
    while True:
        current = next_slot(spec, current)
        yield current


def _next_interval(spec: IntervalSpec, after: datetime) -> datetime:
    if after < spec.anchor_at:
        return spec.anchor_at
    step = spec.interval
    count = (after - spec.anchor_at) // step + 1
    return spec.anchor_at + count * step


def _next_cron(spec: CronSpec, after: datetime) -> datetime:
    zone = spec.zone
    local_after = after.astimezone(zone)
    # Start from the wall-clock time of `after`; for an instant in a repeated hour's second
    # pass, wall times already fired in the first pass are passed over by the check below.
    candidate = spec.cron.next_local(local_after.replace(tzinfo=None) + timedelta(microseconds=1))
    while True:
        instant = _instant(candidate, zone)
        if instant > after:
            return instant
        candidate = spec.cron.next_local(candidate + timedelta(minutes=1))


def _instant(local: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant a slot at naive local time `local` fires: its first occurrence, or the
    end of the gap when the clock skips it."""
    first = local.replace(tzinfo=zone, fold=0)
    utc = first.astimezone(UTC)
    if utc.astimezone(zone).replace(tzinfo=None) == local:
        return utc
    return _gap_end(local, zone)


def _gap_end(local: datetime, zone: ZoneInfo) -> datetime:
    """The instant the clock jumped over `local` (the first instant after the gap)."""
    late = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
    early = local.replace(tzinfo=zone, fold=1).astimezone(UTC)
    low, high = min(early, late), max(early, late)
    offset = high.astimezone(zone).utcoffset()
    while high - low > _ONE_SECOND:
        middle = low + (high - low) / 2
        middle = middle.replace(microsecond=0)
        if middle.astimezone(zone).utcoffset() == offset:
            high = middle
        else:
            low = middle
    return high
