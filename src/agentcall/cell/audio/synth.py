"""Synthetic 16-bit PCM audio (8 kHz mono) for the simulated mode and the mock TTS.

Blocks of 200 ms are computed once and repeated, so minutes of audio cost
microseconds. Agent speech is a syllable-modulated tone, callee speech a
syllable-modulated noise, silence is zeros: recordings are never silent while
someone talks.
"""

from __future__ import annotations

import math
import random
from array import array
from functools import lru_cache

SAMPLE_RATE_HZ = 8000
SAMPLE_WIDTH_BYTES = 2
BLOCK_SAMPLES = 1600  # 200 ms: one "syllable"
AMPLITUDE = 9000


def samples_for_ms(ms: int, rate_hz: int = SAMPLE_RATE_HZ) -> int:
    return ms * rate_hz // 1000


def ms_for_bytes(n_bytes: int, rate_hz: int = SAMPLE_RATE_HZ) -> int:
    return n_bytes // SAMPLE_WIDTH_BYTES * 1000 // rate_hz


def _envelope(i: int) -> float:
    # one syllable per block: rises, holds, falls
    return float(math.sqrt(math.sin(math.pi * i / BLOCK_SAMPLES)))


@lru_cache(maxsize=64)
def _tone_block(freq_hz: int) -> bytes:
    block = array(
        "h",
        (
            int(AMPLITUDE * _envelope(i) * math.sin(2 * math.pi * freq_hz * i / SAMPLE_RATE_HZ))
            for i in range(BLOCK_SAMPLES)
        ),
    )
    return block.tobytes()


@lru_cache(maxsize=64)
def _noise_block(seed: int) -> bytes:
    rng = random.Random(seed)
    block = array(
        "h", (int(AMPLITUDE * _envelope(i) * rng.uniform(-1.0, 1.0)) for i in range(BLOCK_SAMPLES))
    )
    return block.tobytes()


def _repeat(block: bytes, ms: int) -> bytes:
    n_bytes = samples_for_ms(ms) * SAMPLE_WIDTH_BYTES
    whole, rest = divmod(n_bytes, len(block))
    return block * whole + block[:rest]


def silence(ms: int) -> bytes:
    return bytes(samples_for_ms(max(ms, 0)) * SAMPLE_WIDTH_BYTES)


def tone_speech(ms: int, freq_hz: int) -> bytes:
    """Agent-like speech: a syllable-modulated tone of ``freq_hz``."""
    return _repeat(_tone_block(freq_hz), max(ms, 0))


def noise_speech(ms: int, seed: int = 7) -> bytes:
    """Callee-like speech: syllable-modulated noise (deterministic per seed)."""
    return _repeat(_noise_block(seed), max(ms, 0))


def peak(pcm: bytes) -> int:
    """Largest absolute sample value of 16-bit PCM (0 means silence)."""
    samples = array("h")
    samples.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    return max((abs(s) for s in samples), default=0)
