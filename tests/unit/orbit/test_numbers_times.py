"""O-SUB-2 exact numbers and O-API-3 times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonNumber
from agentcall.orbit.domain.numbers import (
    canonical_decimal,
    check_number,
    parse_decimal_uint64,
    parse_uint64,
)
from agentcall.orbit.domain.times import format_time, parse_time

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1", "1"),
        ("1.0", "1"),
        ("10e-1", "1"),
        ("0.1e1", "1"),
        ("100", "1e2"),
        ("1.5", "15e-1"),
        ("-0", "0"),
        ("0.000", "0"),
        ("-2.50", "-25e-1"),
        ("9007199254740993", "9007199254740993"),
        ("1E+2", "1e2"),
    ],
)
def test_o_sub_2_canonical_decimal(text: str, canonical: str) -> None:
    """O-SUB-2: numbers as exact normalised decimals (1 == 1.0)."""
    assert canonical_decimal(JsonNumber(text)) == canonical


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("1e308", True),
        ("1e309", False),
        ("1e-308", True),
        ("1e-309", False),
        ("1000e306", False),  # explicit 306, normalised 309
        ("0.001e-306", False),  # explicit -306, normalised -309
        ("100e-310", False),  # explicit -310
        ("1.7976931348623157e308", True),
        ("1.8e308", False),  # beyond a finite double
        ("1" * 256, True),  # 256 characters, about 1.1e255
        ("0." + "0" * 250 + "1", True),
        ("1" + "0" * 256, False),  # 257 characters
    ],
)
def test_o_sub_2_number_limits(text: str, ok: bool) -> None:
    """O-SUB-2: at most 256 characters, exponents within +-308, finite double magnitude."""
    if ok:
        check_number(text, "n")
    else:
        with pytest.raises(InvalidArgument):
            check_number(text, "n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("30000", 30000), ("18446744073709551615", 2**64 - 1)],
)
def test_uint64_fields_accept(text: str, expected: int) -> None:
    assert parse_uint64(JsonNumber(text), "f") == expected


@pytest.mark.parametrize(
    "value",
    [
        JsonNumber("-1"),
        JsonNumber("1.0"),
        JsonNumber("1e3"),
        JsonNumber("18446744073709551616"),
        "5",
        True,
        None,
    ],
)
def test_uint64_fields_reject(value: object) -> None:
    with pytest.raises(InvalidArgument):
        parse_uint64(value, "f")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("1", True),
        ("42", True),
        ("0", False),
        ("01", False),
        ("-1", False),
        ("1.0", False),
        ("18446744073709551616", False),
        ("", False),
        (" 1", False),
    ],
)
def test_o_can_1_revision_strings(text: str, ok: bool) -> None:
    """O-CAN-1: expected_revision is the decimal string of a non-zero uint64."""
    if ok:
        assert parse_decimal_uint64(text, "r", nonzero=True) == int(text)
    else:
        with pytest.raises(InvalidArgument):
            parse_decimal_uint64(text, "r", nonzero=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-09-17T00:00:00Z", datetime(2026, 9, 17, tzinfo=UTC)),
        ("2026-09-17t08:00:00+08:00", datetime(2026, 9, 17, tzinfo=UTC)),
        ("2026-09-16T19:30:00.5-04:30", datetime(2026, 9, 17, 0, 0, 0, 500000, tzinfo=UTC)),
        ("2026-09-17T00:00:00.123456000Z", datetime(2026, 9, 17, 0, 0, 0, 123456, tzinfo=UTC)),
        ("2000-01-01T00:00:00Z", datetime(2000, 1, 1, tzinfo=UTC)),
        ("9998-12-31T23:59:59.999999Z", datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ],
)
def test_o_api_3_times_parse_to_utc(text: str, expected: datetime) -> None:
    """O-API-3: RFC 3339 with offset, normalised to UTC, microseconds at most."""
    assert parse_time(text, "t") == expected


@pytest.mark.parametrize(
    "text",
    [
        "2026-09-17T00:00:00",  # no offset
        "2026-09-17 00:00:00Z",  # space separator
        "2026-09-17T00:00:00.1234567Z",  # below microseconds
        "1999-12-31T23:59:59Z",
        "2000-01-01T00:30:00+01:00",  # 1999 in UTC
        "9999-01-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-09-17T24:00:00Z",
        "2026-09-17T23:59:60Z",
        "2026-09-17T00:00:00+24:00",
        "２０２６-09-17T00:00:00Z",  # non-ASCII digits
        "",
    ],
)
def test_o_api_3_times_rejected(text: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_time(text, "t")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2026, 9, 17, tzinfo=UTC), "2026-09-17T00:00:00Z"),
        (datetime(2026, 9, 17, 0, 0, 0, 120000, tzinfo=UTC), "2026-09-17T00:00:00.12Z"),
        (datetime(2026, 9, 17, 0, 0, 0, 1), "2026-09-17T00:00:00.000001Z"),
    ],
)
def test_o_api_3_time_format(value: datetime, text: str) -> None:
    assert format_time(value) == text


def _strftime_reference(value: datetime) -> str:
    """The former writer (strftime), which format_time must match byte for byte."""
    utc = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += "." + f"{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


@pytest.mark.parametrize(
    "value",
    [
        datetime(2000, 1, 1, tzinfo=UTC),
        datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 9, 17, 0, 0, 0, 100000, tzinfo=UTC),
        datetime(2026, 9, 17, 0, 0, 0, 10, tzinfo=UTC),
        datetime(2026, 9, 17, 12, 30, 5, 123450),  # naive: UTC by convention
        datetime(2026, 9, 17, 1, 0, 0, 5, tzinfo=timezone(timedelta(hours=2))),  # day before
        datetime(2026, 9, 17, 23, 0, 0, tzinfo=timezone(timedelta(hours=-1, minutes=-30))),
        datetime(999, 5, 6, 7, 8, 9, 10, tzinfo=UTC),  # not padded, as strftime writes it
        datetime(1, 1, 1),
    ],
)
def test_time_format_matches_strftime(value: datetime) -> None:
    assert format_time(value) == _strftime_reference(value)


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "-0",
        "7",
        "-7",
        "10",
        "-10",
        "100",
        "1000000",
        "101",
        "9007199254740993",
        "18446744073709551616000",
        "-120",
        "007",
        "-000",
        "1" * 256,
        "1" + "0" * 255,
    ],
)
def test_canonical_integer_matches_decimal(text: str) -> None:
    """The integer fast path gives what the Decimal path gives for the same value."""
    assert canonical_decimal(JsonNumber(text)) == canonical_decimal(Decimal(text))
