"""Voice activity: the WebRTC detector (model inside webrtcvad-wheels) behind the
VoiceDetector interface, the energy detector as its fallback."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import pytest

from agentcall.cell.audio.vad import EnergyVAD, WebRtcVAD, frame_rms, make_vad
from tests.support.audio_signals import noise, sines, vowel


def test_webrtc_is_the_default_detector() -> None:
    assert make_vad().name == "webrtc" and make_vad("energy").name == "energy"
    with pytest.raises(ValueError, match="webrtc or energy"):
        make_vad("silero")


def test_energy_is_the_fallback_without_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_webrtcvad(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "webrtcvad":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_webrtcvad)
    assert isinstance(make_vad("webrtc"), EnergyVAD)


def speech_frames(frames: int = 25) -> list[bytes]:
    """A vowel whose pitch glides, as a voice does (a steady sine is not a voice)."""
    return [vowel(f0=120 + 3 * i) for i in range(frames)]


@pytest.mark.parametrize(
    ("name", "frames", "voiced_at_least", "voiced_at_most"),
    [
        ("silence", [bytes(320)] * 25, 0, 0),
        ("line hiss", [noise(amplitude=150, seed=i) for i in range(25)], 0, 0),
        ("a vowel", speech_frames(), 20, 25),
    ],
)
def test_webrtc_decisions(
    name: str, frames: list[bytes], voiced_at_least: int, voiced_at_most: int
) -> None:
    vad = WebRtcVAD()
    voiced = sum(vad.is_speech(f) for f in frames)
    assert voiced_at_least <= voiced <= voiced_at_most, (name, voiced)


def test_webrtc_refuses_frames_it_cannot_read() -> None:
    assert WebRtcVAD().is_speech(vowel()[:300]) is False  # not 10/20/30 ms


@pytest.mark.parametrize(
    ("pcm", "voiced"), [(bytes(320), False), (sines(440, amplitude=300), False), (vowel(), True)]
)
def test_energy_decisions(pcm: bytes, voiced: bool) -> None:
    assert EnergyVAD().is_speech(pcm) is voiced


def test_rms() -> None:
    assert frame_rms(b"") == 0.0
    square = np.array([1000, -1000] * 80, dtype="<i2").tobytes()
    assert frame_rms(square) == pytest.approx(1000.0)
