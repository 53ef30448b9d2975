"""Offline ASR with ``pocketsphinx``, whose wheel ships its US-English model.

Nothing is downloaded: the model is ``pocketsphinx.get_model_path()/en-us``. The
line's 8 kHz audio is resampled to the model's 16 kHz. One decoder is loaded
once (about 0.7 s) and shared under a lock; decoding runs in a worker thread.
Recognition of narrow-band (telephone) speech with this wide-band model is
rough: good enough for keywords and opt-out phrases, not for verbatim records.
"""

from __future__ import annotations

import asyncio
import threading
from array import array
from typing import Any

from cell.agent.config import ASRConfig
from cell.agent.providers import Transcription, Utterance
from cell.agent.providers_errors import ProviderConfigError, ProviderTimeoutError
from cell.media.resample import resample

MODEL_HZ = 16_000
DEFAULT_TIMEOUT_MS = 10_000
QUIET = 100  # |sample| below this is line silence (A-law idle decodes to +-8)
MARGIN_MS = 150


def trim_silence(pcm: bytes, sample_rate_hz: int) -> bytes:
    """Cut leading and trailing line silence, keeping a short margin (pure).

    Long runs of idle-channel samples before the speech derail the decoder's
    cepstral mean normalisation; the agent's utterances carry 600 ms of them.
    """
    samples = array("h")
    samples.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    loud = [i for i in range(0, len(samples), 40) if abs(samples[i]) >= QUIET]
    if not loud:
        return b""
    margin = sample_rate_hz * MARGIN_MS // 1000
    start, end = max(0, loud[0] - margin), min(len(samples), loud[-1] + margin)
    return samples[start:end].tobytes()


class PocketsphinxASR:
    def __init__(self, preload: bool = True) -> None:
        self._decoder: Any = None
        self._lock = threading.Lock()
        if preload:  # load the model now, in the background, not on the first turn
            threading.Thread(target=self._preload, name="pocketsphinx-load", daemon=True).start()

    def _preload(self) -> None:
        with self._lock:
            self._load()

    def _load(self) -> Any:
        if self._decoder is None:
            try:
                from pocketsphinx import Decoder  # type: ignore[import-untyped]
            except ImportError as exc:  # pragma: no cover - a dependency of the project
                raise ProviderConfigError("pocketsphinx is not installed") from exc
            self._decoder = Decoder(samprate=MODEL_HZ, loglevel="FATAL")
        return self._decoder

    def decode(self, pcm: bytes, sample_rate_hz: int) -> str:
        """Blocking: the best hypothesis for 16-bit mono ``pcm``."""
        speech = trim_silence(pcm, sample_rate_hz)
        if not speech:
            return ""
        audio = resample(speech, sample_rate_hz, MODEL_HZ)
        with self._lock:
            decoder = self._load()
            decoder.start_utt()
            decoder.process_raw(audio, False, True)
            decoder.end_utt()
            hyp = decoder.hyp()
        return str(hyp.hypstr).strip() if hyp is not None else ""

    async def transcribe(self, utterance: Utterance, config: ASRConfig) -> Transcription:
        timeout = (config.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
        try:
            text = await asyncio.wait_for(
                asyncio.to_thread(self.decode, utterance.pcm, utterance.sample_rate_hz), timeout
            )
        except TimeoutError:
            raise ProviderTimeoutError(f"pocketsphinx took longer than {timeout:.1f} s") from None
        return Transcription(text=text, final=True)
