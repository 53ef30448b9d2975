"""RFC 3339 times (O-API-3): parsed strictly, normalised to UTC, at most microseconds,
years 2000-9998; written as `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` with trailing zeros trimmed."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from agentcall.orbit.domain.errors import InvalidArgument

MIN_YEAR = 2000
MAX_YEAR = 9998

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))\Z"
)


def parse_time(text: str, field: str) -> datetime:
    """Parse an RFC 3339 time with an explicit offset; return an aware UTC datetime."""
    match = _RFC3339.match(text)
    if match is None:
        raise InvalidArgument("must be an RFC 3339 time such as 2026-09-17T00:00:00Z", field)
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or ""
    if fraction[6:].strip("0"):
        raise InvalidArgument("time precision is limited to microseconds", field)
    micro = int((fraction + "000000")[:6])
    offset = _offset(match, field)
    try:
        local = datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
    except ValueError:
        raise InvalidArgument("not a valid calendar time", field) from None
    try:
        value = local - offset
    except OverflowError:
        raise InvalidArgument(f"year must be {MIN_YEAR}-{MAX_YEAR}", field) from None
    check_year(value, field)
    return value


def _offset(match: re.Match[str], field: str) -> timedelta:
    if match.group(8):
        return timedelta(0)
    hours, minutes = int(match.group(10)), int(match.group(11))
    if hours > 23 or minutes > 59:
        raise InvalidArgument("time zone offset out of range", field)
    sign = -1 if match.group(9) == "-" else 1
    return sign * timedelta(hours=hours, minutes=minutes)


def check_year(value: datetime, field: str) -> None:
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise InvalidArgument(f"year must be {MIN_YEAR}-{MAX_YEAR} (in UTC)", field)


def format_time(value: datetime) -> str:
    """UTC, `Z` suffix, fraction only when non-zero and without trailing zeros."""
    utc = as_utc(value)
    if utc.year < 1000:  # isoformat pads such years to 4 digits, strftime does not
        text = utc.strftime("%Y-%m-%dT%H:%M:%S")
        if utc.microsecond:
            text += "." + f"{utc.microsecond:06d}".rstrip("0")
        return text + "Z"
    # isoformat (C) instead of strftime: the same text at a third of the cost (hot path)
    if utc.microsecond:  # "YYYY-MM-DDTHH:MM:SS.ffffff+00:00": cut the offset, trim zeros
        return utc.isoformat(timespec="microseconds")[:26].rstrip("0") + "Z"
    return utc.isoformat(timespec="seconds")[:19] + "Z"


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are UTC by convention (how the store keeps them)."""
    if value.tzinfo is UTC:  # the common case: nothing to convert
        return value
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def to_naive_utc(value: datetime) -> datetime:
    return as_utc(value).replace(tzinfo=None)


def milliseconds(value: int) -> timedelta:
    return timedelta(milliseconds=value)
