"""Offline ASR with ``pocketsphinx``, whose wheel ships its US-English model.

Nothing is downloaded: the model is ``pocketsphinx.get_model_path()/en-us``. The
line's 8 kHz audio is resampled to the model's 16 kHz. Each decoder runs in its
own process (:mod:`agentcall.cell.agent.sphinx_process`: pocketsphinx holds the GIL while it
decodes, which would stall the media clock); decoders (about 1-2 s to load and
about 100 MB each) live in small pools: one is loaded at start, more on demand up
to ``max_decoders``. A whole utterance is decoded at once (``transcribe``), or,
when the task asks for interim results, as it arrives (``open_recognizer``): one
decoder stays with the utterance from its first frame to its final result, and its
partial hypothesis is read after each step of audio.
Recognition of narrow-band (telephone) speech with this wide-band model is
rough: good enough for keywords and opt-out phrases, not for verbatim records.
"""

from __future__ import annotations

import asyncio
import threading
import time
from array import array
from collections.abc import Callable
from typing import Any

from agentcall.cell.agent.config import ASRConfig
from agentcall.cell.agent.providers import Recognizer, Transcription, Utterance
from agentcall.cell.agent.providers_errors import (
    ProviderConfigError,
    ProviderError,
    ProviderTimeoutError,
)
from agentcall.cell.agent.sphinx_process import DecoderProcess

DEFAULT_TIMEOUT_MS = 10_000
QUIET = 100  # |sample| below this is line silence (A-law idle decodes to +-8)
MARGIN_MS = 150
POLL_S = 0.05  # wait for a free decoder this often (loop-agnostic, never blocks a thread)


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


def _batch_decoder() -> DecoderProcess:
    return DecoderProcess()


def _stream_decoder() -> DecoderProcess:
    """A decoder for live input: without the flat-lexicon second pass, whose work at
    the end of the utterance (up to a second) would delay the final result; the tree
    pass already gave the interims and the lattice pass still runs."""
    return DecoderProcess(fwdflat=False)


class DecoderPool:
    """At most ``size`` decoders; one caller at a time uses each."""

    def __init__(self, size: int, factory: Callable[[], Any] = _batch_decoder) -> None:
        if size < 1:
            raise ProviderConfigError("max_decoders must be at least 1")
        self.size = size
        self.created = 0
        self._factory = factory
        self._idle: list[Any] = []
        self.closed = False
        self._lock = threading.Lock()

    def _claim(self) -> tuple[Any, bool]:
        """(an idle decoder or None, whether the caller may create one)."""
        with self._lock:
            if self.closed:
                raise ProviderError("the pocketsphinx decoders were stopped")
            if self._idle:
                return self._idle.pop(), False
            if self.created < self.size:
                self.created += 1
                return None, True
            return None, False

    def _create(self) -> None:
        """Blocking: load a claimed decoder into the idle list (even if its caller
        gave up meanwhile, so no decoder is ever lost)."""
        try:
            decoder = self._factory()
        except BaseException:
            with self._lock:
                self.created -= 1
            raise
        self.release(decoder)

    def preload(self, count: int = 1) -> None:
        """Blocking: load decoders until ``count`` exist (never more than ``size``)."""
        while True:
            with self._lock:
                if self.created >= min(count, self.size):
                    return
                self.created += 1
            self._create()

    async def acquire(self) -> Any:
        while True:
            decoder, create = self._claim()
            if decoder is not None:
                return decoder
            if create:
                await asyncio.to_thread(self._create)
            else:
                await asyncio.sleep(POLL_S)

    def acquire_blocking(self) -> Any:
        """For scripts and tests outside the event loop (the agent uses ``acquire``)."""
        while True:
            decoder, create = self._claim()
            if decoder is not None:
                return decoder
            if create:
                self._create()
            else:
                time.sleep(POLL_S)

    def release(self, decoder: Any) -> None:
        """Give a decoder back; a dead one (``alive`` false) frees its slot instead,
        and once the pool is closed it is closed too."""
        with self._lock:
            if getattr(decoder, "alive", True) and not self.closed:
                self._idle.append(decoder)
                return
            self.created -= 1
        _close(decoder)

    @property
    def busy(self) -> int:
        """Decoders in use (or being loaded)."""
        with self._lock:
            return self.created - len(self._idle)

    def close(self) -> None:
        """End the idle decoders now and the busy ones when they come back."""
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
            self.created -= len(idle)
        for decoder in idle:
            _close(decoder)


def _close(decoder: Any) -> None:
    closer = getattr(decoder, "close", None)
    if closer is not None:
        closer()


class SphinxRecognizer:
    """One utterance on one decoder of the pool, fed as the audio arrives."""

    def __init__(self, pool: DecoderPool, decoder: DecoderProcess, sample_rate_hz: int) -> None:
        self._pool = pool
        self._decoder: DecoderProcess | None = decoder
        self._rate = sample_rate_hz
        self._lock = threading.Lock()

    def _call(self, op: str, pcm: bytes) -> str:
        with self._lock:
            if self._decoder is None:
                return ""
            try:
                text = self._decoder.call(op, pcm, self._rate)
            except ProviderError:
                self._give_back()
                raise
            if op in ("finish", "abort"):
                self._give_back()
            return text

    def _give_back(self) -> None:
        if self._decoder is not None:
            self._pool.release(self._decoder)
            self._decoder = None

    async def start(self) -> None:
        await asyncio.to_thread(self._call, "start", b"")

    async def accept(self, pcm: bytes) -> str:
        return await asyncio.to_thread(self._call, "feed", pcm)

    async def finish(self, pcm: bytes) -> str:
        return await asyncio.to_thread(self._call, "finish", pcm)

    def _abort(self) -> None:
        try:
            self._call("abort", b"")
        except ProviderError:
            pass  # the decoder went back to its pool (or was dropped) all the same

    def close(self) -> None:
        if self._decoder is not None:  # a request may be running: end the utterance after it
            threading.Thread(target=self._abort, name="asr-abort").start()


class PocketsphinxASR:
    """``pool`` decodes whole utterances (as before streaming existed), ``stream_pool``
    live ones (``asr.interim`` true); each holds at most ``max_decoders``."""

    def __init__(self, preload: bool = True, max_decoders: int = 2) -> None:
        self.pool = DecoderPool(max_decoders)
        self.stream_pool = DecoderPool(max_decoders, _stream_decoder)
        if preload:  # load the model now, in the background, not on the first turn
            loader = threading.Thread(target=self._preload, name="pocketsphinx-load")
            loader.daemon = True
            loader.start()

    def _preload(self) -> None:
        self.stream_pool.preload()
        self.pool.preload()

    def close(self) -> None:
        """Stop the decoder processes (they also stop when the cell exits)."""
        self.stream_pool.close()
        self.pool.close()

    def _decode_and_release(self, decoder: DecoderProcess, pcm: bytes, sample_rate_hz: int) -> str:
        try:
            speech = trim_silence(pcm, sample_rate_hz)
            return decoder.call("batch", speech, sample_rate_hz) if speech else ""
        finally:
            self.pool.release(decoder)

    def decode(self, pcm: bytes, sample_rate_hz: int) -> str:
        """Blocking: the best hypothesis for the whole utterance ``pcm`` (16-bit mono)."""
        return self._decode_and_release(self.pool.acquire_blocking(), pcm, sample_rate_hz)

    async def transcribe(self, utterance: Utterance, config: ASRConfig) -> Transcription:
        """The whole utterance at once (trimmed of line silence, batch CMN)."""
        timeout = (config.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
        try:
            async with asyncio.timeout(timeout):
                decoder = await self.pool.acquire()
                text = await asyncio.to_thread(
                    self._decode_and_release, decoder, utterance.pcm, utterance.sample_rate_hz
                )
        except TimeoutError:
            raise ProviderTimeoutError(f"pocketsphinx took longer than {timeout:.1f} s") from None
        return Transcription(text=text, final=True)

    async def open_recognizer(self, config: ASRConfig, sample_rate_hz: int) -> Recognizer:
        decoder = await self.stream_pool.acquire()
        recognizer = SphinxRecognizer(self.stream_pool, decoder, sample_rate_hz)
        try:
            await recognizer.start()
        except BaseException:
            recognizer.close()
            raise
        return recognizer
