"""The recording mixes both directions into one 8 kHz mono WAV, valid while written."""

from __future__ import annotations

import wave
from array import array
from pathlib import Path

import pytest

from agentcall.cell.media.recording import CallRecorder, mix
from agentcall.cell.recording.wav import WavWriter


def pcm(*samples: int) -> bytes:
    return array("h", samples).tobytes()


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (pcm(1, 2), pcm(3, 4), pcm(4, 6)),
        (pcm(30000), pcm(30000), pcm(32767)),
        (pcm(-30000), pcm(-30000), pcm(-32768)),
        (None, pcm(5), pcm(5)),
        (pcm(5), None, pcm(5)),
        (pcm(1), pcm(1, 9), pcm(2, 9)),
        (None, None, b""),
    ],
)
def test_mix(a: bytes | None, b: bytes | None, expected: bytes) -> None:
    assert mix(a, b) == expected


def test_recorder_writes_mono_8k_and_stays_valid_mid_call(tmp_path: Path) -> None:
    path = tmp_path / "call.wav"
    writer = WavWriter(path)
    rec = CallRecorder(writer)
    for i in range(60):
        rec.tick(pcm(*[100] * 160), pcm(*[i] * 160) if i % 2 else None, 320)
    with wave.open(str(path)) as w:  # readable before close: one flushed second
        assert w.getnframes() == 50 * 160
    rec.close()
    info = writer.close()
    assert (info.channels, info.sample_rate_hz, info.duration_ms) == (1, 8000, 1200)


def test_silent_tick_still_advances_time(tmp_path: Path) -> None:
    writer = WavWriter(tmp_path / "s.wav")
    rec = CallRecorder(writer)
    rec.tick(None, None, 320)
    rec.close()
    assert writer.close().duration_ms == rec.duration_ms == 20
