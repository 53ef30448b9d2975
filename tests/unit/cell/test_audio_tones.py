"""In-band DTMF and voicemail beeps found by Goertzel on synthesised 8 kHz audio
(tables: every key, the beep tones, and what must not be taken for them)."""

from __future__ import annotations

import numpy as np
import pytest

from agentcall.cell.audio import tones
from agentcall.cell.audio.tones import BeepTracker, KeyPress
from tests.support.audio_signals import noise, sines, vowel

KEYPAD = [
    (key, low, high)
    for low, row in zip(tones.DTMF_LOW_HZ, tones.KEYS, strict=True)
    for high, key in zip(tones.DTMF_HIGH_HZ, row, strict=True)
]


@pytest.mark.parametrize(("key", "low", "high"), KEYPAD)
def test_every_dtmf_key_is_read(key: str, low: int, high: int) -> None:
    assert tones.dtmf_key(tones.tone_shares(sines(low, high))) == key
    # through G.711 A-law and with twist (high tone 6 dB weaker) too
    twisted = np.frombuffer(sines(low), "<i2") + np.frombuffer(sines(high, amplitude=3000), "<i2")
    assert tones.dtmf_key(tones.tone_shares(twisted.astype("<i2").tobytes())) == key


@pytest.mark.parametrize(
    ("name", "pcm"),
    [
        ("silence", bytes(320)),
        ("quiet tones", sines(852, 1477, amplitude=100)),
        ("one DTMF tone", sines(852)),
        ("two low tones", sines(697, 852)),
        ("noise", noise()),
        ("vowel", vowel()),
        ("beep", sines(1000)),
    ],
)
def test_no_key_where_there_is_none(name: str, pcm: bytes) -> None:
    assert tones.dtmf_key(tones.tone_shares(pcm)) is None, name


@pytest.mark.parametrize(
    ("pcm", "expected"),
    [
        (sines(1000), 1000),
        (sines(1400), 1400),
        (sines(2100), 2100),
        (sines(1000, amplitude=800), 1000),
        (sines(440), None),
        (sines(852, 1477), None),
        (vowel(), None),
        (noise(), None),
        (bytes(320), None),
    ],
)
def test_beep_tones(pcm: bytes, expected: int | None) -> None:
    assert tones.beep_hz(tones.tone_shares(pcm)) == expected


@pytest.mark.parametrize(
    ("frames", "pressed"),
    [
        (["9"], []),  # 20 ms: shorter than a key press
        (["9", "9"], ["9"]),
        (["9", "9", "9", "9"], ["9"]),  # held: once
        (["9", "9", None, "9", "9"], ["9", "9"]),  # released and pressed again
        (["1", "1", "2", "2"], ["1", "2"]),
        (["5", None, "5"], []),  # never two frames in a row
    ],
)
def test_key_presses_are_debounced(frames: list[str | None], pressed: list[str]) -> None:
    state, out = KeyPress(), []
    for key in frames:
        state, got = state.step(key)
        if got is not None:
            out.append(got)
    assert out == pressed


@pytest.mark.parametrize(
    ("beep_ms", "heard", "ended_at"),
    [(100, None, None), (160, 1000, 260), (400, 1000, 500)],
)
def test_beep_must_last_and_its_end_is_known(
    beep_ms: int, heard: int | None, ended_at: int | None
) -> None:
    state, now = BeepTracker(), 0
    frames = [None] * 5 + [1000] * (beep_ms // 20) + [None] * 5
    for hz in frames:
        now += 20
        state = state.step(hz, now)
    assert (state.heard_hz, state.ended_at_ms) == (heard, ended_at)


def test_frames_of_any_length_are_read() -> None:
    assert tones.dtmf_key(tones.tone_shares(sines(941, 1336, ms=30))) == "0"
    assert tones.tone_shares(b"") is None
