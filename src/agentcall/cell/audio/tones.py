"""Pure tones in 20 ms frames of 8 kHz 16-bit PCM: in-band DTMF digits and the beep of
an answering machine (pure functions and frozen states; times in ms).

Each frame's power at the frequencies of interest is Goertzel's single-bin DFT,
evaluated for every frequency at once as one product with a precomputed table of
complex exponentials (numpy), and divided by the frame's energy: 1.0 means all of
the frame is that one sinusoid, 0.5 half of it.

- **DTMF** (ITU-T Q.23/Q.24): one of 697/770/852/941 Hz plus one of
  1209/1336/1477/1633 Hz, together at least 70 % of the frame, each the strongest of
  its group by 6 dB, twist within ±9 dB. A digit counts after two frames in a row
  (40 ms, the shortest tone Q.24 requires) and once per key press.
- **Beep**: voicemail systems end their greeting with a sine of 1000 Hz (most), 1400
  Hz or 2100 Hz; a frame is beep-like when one of them holds at least 80 % of its
  energy, and a beep is at least ``BEEP_MIN_MS`` of the same tone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

SAMPLE_RATE_HZ = 8000
FRAME_SAMPLES = 160
DTMF_LOW_HZ = (697, 770, 852, 941)
DTMF_HIGH_HZ = (1209, 1336, 1477, 1633)
KEYS = ("123A", "456B", "789C", "*0#D")  # KEYS[low][high]
BEEP_HZ = (1000, 1400, 2100)
FREQS_HZ = DTMF_LOW_HZ + DTMF_HIGH_HZ + BEEP_HZ
MIN_TONE_RMS = 200.0  # quieter frames carry no tone worth reading
DTMF_MIN_SHARE = 0.70
DTMF_GROUP_MARGIN = 4.0  # 6 dB above the next frequency of the same group
DTMF_MAX_TWIST = 8.0  # 9 dB between the two tones
DTMF_FRAMES = 2
BEEP_MIN_SHARE = 0.80
BEEP_MIN_MS = 160


def _table(freqs: tuple[int, ...], n: int) -> NDArray[np.float32]:
    """Cosines then sines of every frequency: one product gives every DFT bin."""
    phase = 2 * np.pi * np.outer(freqs, np.arange(n)) / SAMPLE_RATE_HZ
    return np.vstack([np.cos(phase), np.sin(phase)]).astype(np.float32)


_TABLE = _table(FREQS_HZ, FRAME_SAMPLES)
_K = len(FREQS_HZ)


def tone_shares(pcm: bytes) -> list[float] | None:
    """Share of the frame's energy at each of ``FREQS_HZ`` (None: too quiet to hold a tone)."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float32)
    n = samples.size
    if n == 0:
        return None
    energy = float(samples @ samples)
    if energy <= n * MIN_TONE_RMS**2:
        return None
    table = _TABLE if n == FRAME_SAMPLES else _table(FREQS_HZ, n)
    bins = table @ samples
    shares = (bins[:_K] ** 2 + bins[_K:] ** 2) * np.float32(2.0 / (n * energy))
    result: list[float] = shares.tolist()
    return result


def _strongest(group: Sequence[float]) -> tuple[int, float] | None:
    """The index and share of the strongest frequency of a group, if it stands out."""
    best = max(range(len(group)), key=group.__getitem__)
    second = max(x for i, x in enumerate(group) if i != best)
    if group[best] < DTMF_GROUP_MARGIN * second:
        return None
    return best, group[best]


def dtmf_key(shares: Sequence[float] | None) -> str | None:
    """The DTMF key this frame holds, or None."""
    if shares is None or sum(shares[0:8]) < DTMF_MIN_SHARE:
        return None
    low = _strongest(shares[0:4])
    high = _strongest(shares[4:8])
    if low is None or high is None:
        return None
    (row, p_low), (col, p_high) = low, high
    if p_low + p_high < DTMF_MIN_SHARE:
        return None
    if not 1 / DTMF_MAX_TWIST <= p_high / p_low <= DTMF_MAX_TWIST:
        return None
    return KEYS[row][col]


def beep_hz(shares: Sequence[float] | None) -> int | None:
    """The beep frequency this frame holds, or None."""
    if shares is None:
        return None
    for hz, share in zip(BEEP_HZ, shares[8:], strict=True):
        if share >= BEEP_MIN_SHARE:
            return hz
    return None


@dataclass(frozen=True)
class KeyPress:
    """Debounces DTMF frames into key presses: a key counts after ``DTMF_FRAMES``
    frames in a row and once until it is released."""

    key: str | None = None
    frames: int = 0
    reported: bool = False

    def step(self, key: str | None) -> tuple[KeyPress, str | None]:
        if key is None:
            return (self if self.key is None else _RELEASED), None
        frames = self.frames + 1 if key == self.key else 1
        if frames >= DTMF_FRAMES and not (self.reported and key == self.key):
            return KeyPress(key, frames, True), key
        return KeyPress(key, frames, self.reported and key == self.key), None


@dataclass(frozen=True)
class BeepTracker:
    """A beep is ``BEEP_MIN_MS`` of one beep tone; ``ended_at_ms`` is set when it stops."""

    hz: int | None = None
    since_ms: int = 0
    heard_hz: int | None = None  # a whole beep was heard
    ended_at_ms: int | None = None

    def step(self, hz: int | None, now_ms: int, frame_ms: int = 20) -> BeepTracker:
        if hz is None and self.hz is None:
            return self  # no tone before, none now (``since_ms`` is unused then)
        if hz is not None and hz == self.hz:
            long_enough = now_ms - self.since_ms >= BEEP_MIN_MS
            heard = hz if long_enough else self.heard_hz
            return BeepTracker(hz, self.since_ms, heard, None if long_enough else self.ended_at_ms)
        ended = self.ended_at_ms
        if self.hz is not None and self.heard_hz == self.hz and ended is None:
            ended = now_ms - frame_ms  # the beep just stopped
        if hz is not None:
            return BeepTracker(hz, now_ms - frame_ms, self.heard_hz, ended)
        return BeepTracker(None, now_ms, self.heard_hz, ended)


_RELEASED = KeyPress()
