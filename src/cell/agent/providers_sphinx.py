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
from typing import Any

from cell.agent.config import ASRConfig
from cell.agent.providers import Transcription, Utterance
from cell.agent.providers_errors import ProviderConfigError, ProviderTimeoutError
from cell.media.resample import resample

MODEL_HZ = 16_000
DEFAULT_TIMEOUT_MS = 10_000


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
        audio = resample(pcm, sample_rate_hz, MODEL_HZ)
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
