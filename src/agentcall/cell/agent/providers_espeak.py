"""Offline TTS with Debian's ``espeak-ng`` (subprocess to a WAV, resampled to 8 kHz)."""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
import wave
from pathlib import Path

from agentcall.cell.agent.config import TTSConfig
from agentcall.cell.agent.providers import Speech
from agentcall.cell.agent.providers_errors import (
    ProviderConfigError,
    ProviderError,
    ProviderTimeoutError,
)
from agentcall.cell.audio.resample import resample

LINE_RATE_HZ = 8000
BASE_WPM = 175  # espeak-ng's default speed, words per minute
DEFAULT_TIMEOUT_MS = 10_000
_VOICE = re.compile(r"^[A-Za-z0-9_+-]{1,64}$")


def espeak_args(
    binary: str, text: str, config: TTSConfig, default_voice: str, out: Path
) -> list[str]:
    """The command line for ``text`` (pure): voice checked, speed scaled from 175 wpm."""
    voice = config.voice if config.voice and _VOICE.match(config.voice) else default_voice
    wpm = max(80, min(450, round(BASE_WPM * (config.speed or 1.0))))
    return [binary, "-v", voice, "-s", str(wpm), "-w", str(out), "--", text]


class EspeakTTS:
    """``voice`` is an espeak-ng voice name (``en-us``, ``en+f3``, ``zh``); an unknown or
    unsafe name falls back to ``default_voice``."""

    def __init__(self, binary: str = "espeak-ng", default_voice: str = "en-us") -> None:
        self.binary = binary
        self.default_voice = default_voice

    async def synthesize(self, text: str, config: TTSConfig) -> Speech:
        binary = shutil.which(self.binary)
        if binary is None:
            raise ProviderConfigError(
                f"TTS {config.provider_ref!r}: {self.binary} not found (apt-get install espeak-ng)"
            )
        with tempfile.TemporaryDirectory(prefix="cell-tts-") as tmp:
            out = Path(tmp) / "speech.wav"
            await self._run(espeak_args(binary, text, config, self.default_voice, out), config)
            with wave.open(str(out), "rb") as w:
                rate, pcm = w.getframerate(), w.readframes(w.getnframes())
        line = await asyncio.to_thread(resample, pcm, rate, LINE_RATE_HZ)
        return Speech(pcm=line, sample_rate_hz=LINE_RATE_HZ, duration_ms=len(line) * 1000 // 16000)

    async def _run(self, args: list[str], config: TTSConfig) -> None:
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        timeout = (config.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
        try:
            _, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise ProviderTimeoutError(f"espeak-ng took longer than {timeout:.1f} s") from None
        except asyncio.CancelledError:  # barge-in: the sentence is not wanted any more
            if proc.returncode is None:
                proc.kill()
            raise
        if proc.returncode != 0:
            raise ProviderError(f"espeak-ng failed ({proc.returncode}): {err.decode()[:200]}")
