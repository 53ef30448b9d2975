"""Keypad digits of the callee: RFC 4733 telephone-events on RTP (pure).

A key press is one event: a series of packets with the same RTP timestamp (the
event's start), the duration growing, the last three with the End bit. The digit
is reported at the first packet of an event (a new timestamp), so a press is heard
at once and retransmitted ends are not counted twice. In-band tones in the PCMA
audio are read by :mod:`agentcall.cell.audio.tones`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

EVENT_KEYS = "0123456789*#ABCD"  # RFC 4733 §3.2: events 0-15


@dataclass(frozen=True)
class TelephoneEvent:
    event: int
    end: bool
    volume: int
    duration: int  # timestamp units (1/8000 s)

    @property
    def key(self) -> str | None:
        return EVENT_KEYS[self.event] if self.event < len(EVENT_KEYS) else None


def parse_event(payload: bytes) -> TelephoneEvent | None:
    """The event in an RTP payload (None: shorter than the 4-byte event block)."""
    if len(payload) < 4:
        return None
    event, flags, duration = struct.unpack_from("!BBH", payload)
    return TelephoneEvent(event, bool(flags & 0x80), flags & 0x3F, duration)


@dataclass(frozen=True)
class EventReader:
    """Which telephone-event packets start a new key press (by ssrc and timestamp)."""

    last: tuple[int, int] | None = None

    def step(self, ssrc: int, timestamp: int, payload: bytes) -> tuple[EventReader, str | None]:
        event = parse_event(payload)
        if event is None or event.key is None:
            return self, None
        if self.last == (ssrc, timestamp):
            return self, None
        return EventReader((ssrc, timestamp)), event.key
