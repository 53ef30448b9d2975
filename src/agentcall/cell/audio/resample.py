"""Sample-rate conversion of 16-bit mono PCM (numpy): espeak-ng's 22.05 kHz to the
line's 8 kHz, and the line's 8 kHz to the 16 kHz the ASR model expects.

Downsampling low-passes first (windowed sinc below the new Nyquist), so speech
above 4 kHz does not alias into the telephone band; then samples are taken by
linear interpolation at the new instants.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

TAPS = 63


def _lowpass(cutoff: float) -> NDArray[np.float64]:
    """Windowed-sinc FIR; ``cutoff`` as a fraction of the sample rate (0..0.5)."""
    n = np.arange(TAPS) - (TAPS - 1) / 2
    kernel = 2 * cutoff * np.sinc(2 * cutoff * n) * np.hamming(TAPS)
    result: NDArray[np.float64] = kernel / kernel.sum()
    return result


def resample(pcm: bytes, src_hz: int, dst_hz: int) -> bytes:
    """16-bit little-endian mono PCM from ``src_hz`` to ``dst_hz``."""
    if src_hz <= 0 or dst_hz <= 0:
        raise ValueError("sample rates must be positive")
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
    if src_hz == dst_hz or samples.size == 0:
        return pcm[: len(pcm) - len(pcm) % 2]
    if dst_hz < src_hz:
        samples = np.convolve(samples, _lowpass(0.45 * dst_hz / src_hz), mode="same")
    count = samples.size * dst_hz // src_hz
    instants = np.arange(count) * (src_hz / dst_hz)
    out = np.interp(instants, np.arange(samples.size), samples)
    return bytes(np.clip(np.rint(out), -32768, 32767).astype("<i2").tobytes())
