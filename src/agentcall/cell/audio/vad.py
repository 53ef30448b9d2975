"""Voice activity of one 20 ms frame of 8 kHz 16-bit PCM: is the callee speaking?

:class:`WebRtcVAD` is the maintained detector: the WebRTC project's GMM voice
detector, whose model is compiled into the ``webrtcvad-wheels`` package (no download,
no torch). It answers per 10/20/30 ms frame at 8 kHz in a few microseconds. A frame
also needs some energy (``floor_rms``), so line noise and comfort noise that the GMM
sometimes calls voiced do not open an utterance.

:class:`EnergyVAD` is the fallback when the package cannot be imported, and what the
unit tests of turn-taking use: a frame is voiced above a fixed RMS.
"""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np

log = logging.getLogger("cell.vad")

SAMPLE_RATE_HZ = 8000
SPEECH_RMS = 500.0  # energy detector: 16-bit RMS above which a frame counts as speech
FLOOR_RMS = 120.0  # WebRTC detector: quieter frames are never speech
WEBRTC_MODE = 2  # 0 (least aggressive about filtering non-speech) .. 3 (most)


def frame_rms(pcm: bytes) -> float:
    """Root mean square of 16-bit little-endian PCM (0.0 for an empty frame)."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2")
    if samples.size == 0:
        return 0.0
    as_float = samples.astype(np.float32)
    return float(np.sqrt(np.dot(as_float, as_float) / samples.size))


class VoiceDetector(Protocol):
    """One decision per frame of 16-bit PCM at 8 kHz (10, 20 or 30 ms)."""

    name: str

    def is_speech(self, pcm: bytes) -> bool: ...


class EnergyVAD:
    name = "energy"

    def __init__(self, threshold_rms: float = SPEECH_RMS) -> None:
        self.threshold_rms = threshold_rms

    def is_speech(self, pcm: bytes) -> bool:
        return frame_rms(pcm) > self.threshold_rms


class WebRtcVAD:
    name = "webrtc"

    def __init__(self, mode: int = WEBRTC_MODE, floor_rms: float = FLOOR_RMS) -> None:
        import webrtcvad  # type: ignore[import-untyped]  # model inside webrtcvad-wheels

        self._vad = webrtcvad.Vad(mode)
        self.floor_rms = floor_rms

    def is_speech(self, pcm: bytes) -> bool:
        if len(pcm) not in (160, 320, 480) or frame_rms(pcm) <= self.floor_rms:
            return False
        return bool(self._vad.is_speech(pcm, SAMPLE_RATE_HZ))


def make_vad(kind: str = "webrtc") -> VoiceDetector:
    """``webrtc`` (falls back to ``energy`` with a warning when unavailable) or ``energy``."""
    if kind == "energy":
        return EnergyVAD()
    if kind != "webrtc":
        raise ValueError(f"unknown VAD {kind!r}: use webrtc or energy")
    try:
        return WebRtcVAD()
    except ImportError:
        log.warning("webrtcvad is not installed (pip install webrtcvad-wheels): energy VAD")
        return EnergyVAD()
