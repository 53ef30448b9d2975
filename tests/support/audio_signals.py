"""Synthesised 8 kHz 16-bit test signals: sines (DTMF, beeps), noise, a voiced vowel."""

from __future__ import annotations

import numpy as np

RATE = 8000


def sines(*freqs: float, ms: int = 20, amplitude: float = 6000.0, start: int = 0) -> bytes:
    t = (np.arange(RATE * ms // 1000) + start) / RATE
    wave = sum(amplitude * np.sin(2 * np.pi * f * t) for f in freqs)
    return np.clip(wave, -32768, 32767).astype("<i2").tobytes()


def noise(ms: int = 20, amplitude: float = 6000.0, seed: int = 3) -> bytes:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-amplitude, amplitude, RATE * ms // 1000)).astype("<i2").tobytes()


def vowel(ms: int = 20, f0: float = 140.0) -> bytes:
    """A voiced vowel: harmonics of f0 shaped by two formants (speech-like spectrum)."""
    harmonics = np.arange(1, 40) * f0
    harmonics = harmonics[harmonics < 3800]
    gains = 1 / (1 + ((harmonics - 700) / 150) ** 2) + 0.6 / (1 + ((harmonics - 1200) / 200) ** 2)
    t = np.arange(RATE * ms // 1000) / RATE
    wave = sum(g * np.sin(2 * np.pi * h * t) for h, g in zip(harmonics, gains, strict=True))
    return (wave / np.max(np.abs(wave)) * 8000).astype("<i2").tobytes()
