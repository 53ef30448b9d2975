"""Streaming ASR of one utterance: audio fed as it arrives, interim hypotheses at a
bounded rate, then one final result.

The provider side is a :class:`~agentcall.cell.agent.providers.Recognizer`. An
:class:`UtteranceStream` drives it off the media clock: :meth:`~UtteranceStream.feed`
only queues audio (it never blocks the 20 ms tick); a task hands the queue to the
recogniser every ``STEP_MS`` of audio (all of the backlog at once when it fell
behind, so hypotheses never pile up), and :class:`InterimGate` decides which
hypotheses are reported: non-empty, changed since the last one, and none once the
utterance has ended. The final text comes only from ``Recognizer.finish``: an
interim hypothesis is never the transcript.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agentcall.cell.agent.providers import Recognizer
from agentcall.cell.agent.providers_errors import ProviderTimeoutError
from agentcall.cell.telemetry.metrics import count_handled

log = logging.getLogger("cell.asr")

STEP_MS = 240  # at most one interim hypothesis per this much audio


@dataclass(frozen=True)
class InterimGate:
    """Which interim hypotheses of one utterance are reported (pure)."""

    last: str = ""
    emitted: int = 0
    ended: bool = False

    def offer(self, text: str) -> tuple[InterimGate, str | None]:
        """The gate after hypothesis ``text``, and the text to report (None: nothing)."""
        text = " ".join(text.split())
        if self.ended or not text or text == self.last:
            return self, None
        return InterimGate(text, self.emitted + 1), text

    def end(self) -> InterimGate:
        return InterimGate(self.last, self.emitted, ended=True)


def step_bytes(sample_rate_hz: int, step_ms: int = STEP_MS) -> int:
    """Bytes of 16-bit mono audio in one interim step."""
    return sample_rate_hz * step_ms // 1000 * 2


def due_bytes(pending: int, step: int, ended: bool) -> int:
    """How many queued bytes go to the recogniser now (0: wait for more audio)."""
    if ended or pending >= step:
        return pending
    return 0


class UtteranceStream:
    """One utterance's streaming recognition; ``start_ms``/``end_ms`` are call times."""

    def __init__(
        self,
        open_recognizer: Callable[[], Awaitable[Recognizer]],
        sample_rate_hz: int,
        on_interim: Callable[[str], None] | None,
        *,
        start_ms: int = 0,
        step_ms: int = STEP_MS,
    ) -> None:
        self.start_ms = start_ms
        self.end_ms = start_ms
        self.gate = InterimGate()
        self._open = open_recognizer
        self._on_interim = on_interim
        self._step = step_bytes(sample_rate_hz, step_ms)
        self._pending = bytearray()
        self._wake = asyncio.Event()
        self._ended = asyncio.Event()
        self._cancelled = False
        self._flush = False
        self._task = asyncio.get_running_loop().create_task(self._run(), name="asr-stream")

    def feed(self, pcm: bytes) -> None:
        if self._ended.is_set():
            return
        self._pending += pcm
        if len(self._pending) >= self._step:
            self._wake.set()

    def flush(self) -> None:
        """Recognise the audio queued so far now, not at the next step (the callee
        paused): :attr:`hypothesis` is fresh once :attr:`flushing` is false again."""
        if not self._ended.is_set():
            self._flush = True
            self._wake.set()

    @property
    def flushing(self) -> bool:
        return self._flush

    @property
    def hypothesis(self) -> str:
        """The latest interim hypothesis (empty before the first one)."""
        return self.gate.last

    def end(self, end_ms: int) -> None:
        """No more audio: the final result follows."""
        if not self._ended.is_set():
            self.end_ms = end_ms
            self.gate = self.gate.end()
            self._ended.set()
            self._wake.set()

    def cancel(self) -> None:
        """The utterance was noise: no final result (``result`` returns None)."""
        self._cancelled = True
        self._ended.set()
        self._task.cancel()

    async def result(self, timeout_s: float) -> str | None:
        """The final text once the utterance ended (None when cancelled); raises
        :class:`ProviderTimeoutError` when it takes longer than ``timeout_s`` after
        the end."""
        await self._ended.wait()
        if self._cancelled:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(self._task), timeout_s)
        except TimeoutError:
            self._task.cancel()
            raise ProviderTimeoutError(
                f"final ASR result took longer than {timeout_s:.1f} s"
            ) from None
        except asyncio.CancelledError:
            if self._cancelled:
                return None
            raise

    async def _run(self) -> str:
        recognizer = await self._open()
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                ended, flush = self._ended.is_set(), self._flush
                size = due_bytes(len(self._pending), self._step, ended or flush)
                chunk = bytes(self._pending[:size])
                del self._pending[:size]
                if ended:
                    return await recognizer.finish(chunk)
                if chunk:
                    self._report(await recognizer.accept(chunk))
                if flush:
                    self._flush = False
                if self._ended.is_set() or len(self._pending) >= self._step:
                    self._wake.set()
        finally:
            recognizer.close()

    def _report(self, hypothesis: str) -> None:
        self.gate, text = self.gate.offer(hypothesis)
        if text is None or self._on_interim is None:
            return
        try:
            self._on_interim(text)
        except Exception:  # a faulty listener must not end the recognition
            count_handled("agent.interim_listener")
            log.exception("interim listener failed")
