"""Receive side of RTP: sequence extension, RFC 3550 statistics and a jitter buffer.

All of it is deterministic: arrival times are passed in, nothing reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

CLOCK_HZ = 8000


def extend_sequence(highest: int | None, sequence: int) -> int:
    """The 16-bit ``sequence`` as an unbounded counter, nearest to ``highest``."""
    if highest is None:
        return sequence
    delta = ((sequence - (highest & 0xFFFF) + 0x8000) & 0xFFFF) - 0x8000
    return highest + delta


@dataclass(frozen=True)
class ReceiveStats:
    """RFC 3550 §6.4.1 / Appendix A.8 receiver statistics."""

    received: int = 0
    base: int | None = None
    highest: int | None = None
    jitter: float = 0.0  # in timestamp units
    last_transit: float | None = None

    @property
    def expected(self) -> int:
        if self.base is None or self.highest is None:
            return 0
        return self.highest - self.base + 1

    @property
    def lost(self) -> int:
        return max(0, self.expected - self.received)

    @property
    def loss_fraction(self) -> float:
        return self.lost / self.expected if self.expected else 0.0

    @property
    def jitter_ms(self) -> float:
        return self.jitter * 1000.0 / CLOCK_HZ


def on_packet(stats: ReceiveStats, sequence: int, timestamp: int, arrival_s: float) -> ReceiveStats:
    ext = extend_sequence(stats.highest, sequence)
    transit = arrival_s * CLOCK_HZ - timestamp
    jitter = stats.jitter
    if stats.last_transit is not None:
        jitter += (abs(transit - stats.last_transit) - jitter) / 16.0
    return replace(
        stats,
        received=stats.received + 1,
        base=ext if stats.base is None else min(stats.base, ext),
        highest=ext if stats.highest is None else max(stats.highest, ext),
        jitter=jitter,
        last_transit=transit,
    )


@dataclass
class JitterBuffer:
    """Reorders frames and plays one per 20 ms tick; tolerates loss and reordering.

    Playout starts once ``depth`` frames are buffered. A frame that arrives after
    its slot was played is *late* (dropped, counted); a missing frame at its slot
    while later ones are buffered is *concealed* (the caller plays silence). An
    empty buffer is an *underrun*: the slot is kept (the peer is late or quiet),
    and after ``rebuffer_after`` of them in a row the buffer refills to ``depth``
    before playing again. More than ``capacity`` frames buffered drops the oldest.
    """

    depth: int = 3
    capacity: int = 50
    rebuffer_after: int = 10
    late: int = 0
    duplicates: int = 0
    concealed: int = 0
    overflowed: int = 0
    underruns: int = 0
    played: int = 0
    _frames: dict[int, bytes] = field(default_factory=dict)
    _highest: int | None = None
    _next: int | None = None
    _last_played: int | None = None
    _empty_ticks: int = 0

    def push(self, sequence: int, payload: bytes) -> None:
        ext = extend_sequence(self._highest, sequence)
        self._highest = ext if self._highest is None else max(self._highest, ext)
        if self._last_played is not None and ext <= self._last_played:
            self.late += 1
            return
        if ext in self._frames:
            self.duplicates += 1
            return
        self._frames[ext] = payload
        while len(self._frames) > self.capacity:
            oldest = min(self._frames)
            del self._frames[oldest]
            self.overflowed += 1
            self._last_played = oldest
            if self._next is not None and self._next <= oldest:
                self._next = oldest + 1

    def pop(self) -> bytes | None:
        """The frame of this tick, or None (not started, lost, or the peer is quiet)."""
        if self._next is None:
            if len(self._frames) < self.depth:
                return None
            self._next = min(self._frames)
        slot = self._next
        if not self._frames:  # underrun: nothing newer has arrived, keep the slot
            self.underruns += 1
            self._empty_ticks += 1
            if self._empty_ticks >= self.rebuffer_after:
                self._next = None  # refill to ``depth`` before playing again
                self._empty_ticks = 0
            return None
        self._empty_ticks = 0
        self._next += 1
        self._last_played = slot
        payload = self._frames.pop(slot, None)
        if payload is None:
            self.concealed += 1  # lost (or later than every frame behind it)
            return None
        self.played += 1
        return payload
