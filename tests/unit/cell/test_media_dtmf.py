"""RFC 4733 telephone-events: the 4-byte event block, one key per press however many
packets (the end is sent three times), a new press at a new timestamp."""

from __future__ import annotations

import struct

import pytest

from agentcall.cell.media.dtmf import EventReader, TelephoneEvent, parse_event


def event(key: int, end: bool = False, duration: int = 160, volume: int = 10) -> bytes:
    return struct.pack("!BBH", key, (0x80 if end else 0) | volume, duration)


@pytest.mark.parametrize(
    ("payload", "parsed"),
    [
        (event(9), TelephoneEvent(9, False, 10, 160)),
        (event(11, end=True, duration=1280), TelephoneEvent(11, True, 10, 1280)),
        (bytes.fromhex("098a08c0"), TelephoneEvent(9, True, 10, 2240)),  # sipp's digit 9
        (b"\x09\x0a", None),
    ],
)
def test_parse(payload: bytes, parsed: TelephoneEvent | None) -> None:
    assert parse_event(payload) == parsed


@pytest.mark.parametrize(("code", "key"), [(0, "0"), (9, "9"), (10, "*"), (11, "#"), (15, "D")])
def test_event_codes(code: int, key: str) -> None:
    assert TelephoneEvent(code, False, 0, 0).key == key


def test_one_key_per_press() -> None:
    packets = [(1, 800, event(9, duration=d)) for d in (0, 160, 320)]
    packets += [(1, 800, event(9, end=True, duration=480))] * 3  # the end, three times
    packets += [(1, 2400, event(4))]  # the next press
    packets += [(1, 2400, event(4, end=True))]
    packets += [(1, 4000, event(200))]  # not a keypad event
    reader, keys = EventReader(), []
    for ssrc, ts, payload in packets:
        reader, key = reader.step(ssrc, ts, payload)
        if key is not None:
            keys.append(key)
    assert keys == ["9", "4"]
