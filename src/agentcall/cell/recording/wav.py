"""WAV files written progressively with the stdlib ``wave`` module.

:class:`WavWriter` patches the header after every append and flushes, so a
process killed mid-call leaves a valid WAV of everything written so far;
:func:`repair_wav` rebuilds the header of a file cut mid-write.
"""

from __future__ import annotations

import hashlib
import os
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from agentcall.cell.audio.synth import SAMPLE_RATE_HZ, SAMPLE_WIDTH_BYTES

CHANNELS = 1
HEADER_BYTES = 44


@dataclass(frozen=True)
class WavInfo:
    path: Path
    size_bytes: int
    sha256: str
    duration_ms: int
    sample_rate_hz: int
    channels: int


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def wav_info(path: Path) -> WavInfo:
    """Size, SHA-256 and duration of a WAV file (raises ``wave.Error`` if invalid)."""
    with wave.open(str(path), "rb") as w:
        frames, rate, channels = w.getnframes(), w.getframerate(), w.getnchannels()
    return WavInfo(
        path=path,
        size_bytes=path.stat().st_size,
        sha256=sha256_file(path),
        duration_ms=frames * 1000 // rate if rate else 0,
        sample_rate_hz=rate,
        channels=channels,
    )


class WavWriter:
    """Appends 16-bit PCM mono frames to a WAV file, keeping it valid at every step."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self._fsync = fsync
        self._file: BinaryIO = path.open("wb")
        self._wave = wave.open(self._file, "wb")
        self._wave.setnchannels(CHANNELS)
        self._wave.setsampwidth(SAMPLE_WIDTH_BYTES)
        self._wave.setframerate(SAMPLE_RATE_HZ)
        self._wave.writeframes(b"")  # header on disk now: a valid empty WAV
        self._sync()
        self.frames = 0
        self.closed = False

    @property
    def duration_ms(self) -> int:
        return self.frames * 1000 // SAMPLE_RATE_HZ

    def _sync(self) -> None:
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())

    def append(self, pcm: bytes) -> None:
        if not pcm:
            return
        usable = pcm[: len(pcm) - len(pcm) % SAMPLE_WIDTH_BYTES]
        self._wave.writeframes(usable)  # patches the header when the length changes
        self.frames += len(usable) // SAMPLE_WIDTH_BYTES
        self._sync()

    def close(self) -> WavInfo:
        if not self.closed:
            self._wave.close()
            self._file.close()
            self.closed = True
        return wav_info(self.path)


def _pcm_payload(raw: bytes) -> bytes:
    """PCM bytes of a possibly damaged WAV: after the ``data`` chunk id, else after 44."""
    marker = raw.find(b"data", 12)
    start = marker + 8 if 0 <= marker <= 200 else HEADER_BYTES
    payload = raw[start:]
    return payload[: len(payload) - len(payload) % SAMPLE_WIDTH_BYTES]


def repair_wav(path: Path) -> WavInfo:
    """Make ``path`` a valid WAV holding every whole sample it contains, then describe it."""
    try:
        with wave.open(str(path), "rb") as w:
            declared = w.getnframes() * SAMPLE_WIDTH_BYTES
        actual = path.stat().st_size - HEADER_BYTES
        if declared == actual:
            return wav_info(path)
    except (wave.Error, EOFError):
        pass
    pcm = _pcm_payload(path.read_bytes())
    tmp = path.with_name(path.name + ".repair")
    with wave.open(str(tmp), "wb") as w:
        w.setnchannels(CHANNELS)
        w.setsampwidth(SAMPLE_WIDTH_BYTES)
        w.setframerate(SAMPLE_RATE_HZ)
        w.writeframes(pcm)
    os.replace(tmp, path)
    return wav_info(path)
