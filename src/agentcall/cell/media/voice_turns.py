"""What the voice agent does with the callee's final words: the transcript turn, an
opt-out (a goodbye, then the call ends), ``max_turns``, and the reply: a held
speculative reply released when it answers these words
(:mod:`agentcall.cell.media.preempt`), else the LLM asked now. The reply is spoken as it
streams (:class:`~agentcall.cell.media.speaker.Speaker`). A mixin of
:class:`~agentcall.cell.media.voice.VoiceAgent`, which holds the state named here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from agentcall.cell.agent.config import AgentConfig, AgentMode
from agentcall.cell.agent.optout import OptOutDetector
from agentcall.cell.agent.providers import (
    ChatMessage,
    ProviderRegistry,
    StreamingLLMProvider,
    Utterance,
)
from agentcall.cell.agent.streaming import UtteranceStream
from agentcall.cell.domain.errors import CellError
from agentcall.cell.domain.model import Role, Turn
from agentcall.cell.media import preempt, turns
from agentcall.cell.media.rtp import FRAME_MS
from agentcall.cell.media.speaker import ReplyTiming, Speaker

log = logging.getLogger("cell.voice")
LINE_HZ = 8000
GOODBYE = "Understood. We will not call you again. Goodbye."
DRAIN_LIMIT_MS = 10_000
ASR_TIMEOUT_MS = 10_000  # final result after the end of an utterance (asr.timeout_ms wins)


class Conversing:
    config: AgentConfig
    clock: Callable[[], float]
    providers: ProviderRegistry
    sink: Any  # agentcall.cell.media.voice.AgentSink
    detector: OptOutDetector
    speaker: Speaker
    preempter: preempt.Preempter
    now_ms: int
    user_turns: int
    finished: str | None
    _history: list[ChatMessage]
    _turn_no: int
    _closing: bool
    _opted_out: bool
    _reply_task: asyncio.Task[Any] | None

    def _may_reply(self, start_ms: int) -> bool:
        raise NotImplementedError

    def _finish(self, reason: str) -> None:
        if self.finished is None:
            self.finished = reason
            self.sink.finish(reason)

    def _turn(self, role: Role, text: str, start: int, end: int) -> None:
        n = self._turn_no = self._turn_no + 1
        self.sink.transcript(Turn(f"turn-{n}", f"segment-{n}", role, text, start, end))

    # -- the conversation -------------------------------------------------------------
    async def _user_turn(self, pcm: bytes, start: int, end: int, timing: ReplyTiming) -> None:
        try:
            heard = await self.providers.get_asr(self.config.asr.provider_ref).transcribe(
                Utterance(pcm=pcm, sample_rate_hz=LINE_HZ), self.config.asr
            )
        except CellError as exc:
            log.warning("ASR failed: %s", exc.message)
            return
        timing.transcribed = self.clock()
        await self._heard(heard.text, start, end, timing)

    async def _streamed_turn(
        self, stream: UtteranceStream, timing: ReplyTiming, spec: preempt.Preemption | None
    ) -> None:
        timeout_s = (self.config.asr.timeout_ms or ASR_TIMEOUT_MS) / 1000
        try:
            text = await stream.result(timeout_s)
            timing.transcribed = self.clock()
            if text is not None:
                await self._heard(text, stream.start_ms, stream.end_ms, timing, spec)
        except CellError as exc:
            log.warning("ASR failed: %s", exc.message)
        finally:
            self.preempter.drop(spec)  # not released: nobody hears it

    async def _heard(
        self,
        text: str,
        start: int,
        end: int,
        timing: ReplyTiming,
        spec: preempt.Preemption | None = None,
    ) -> None:
        """The callee's final words of one utterance: transcript, opt-out, reply."""
        text = text.strip()
        if not text:
            return
        self._turn(Role.USER, text, start, end)
        self.user_turns += 1
        self._history.append(ChatMessage("user", text))
        phrase = self.detector.detect(text)
        if self._opted_out:
            return
        if phrase is not None:
            self.sink.opt_out(phrase, end)
        if self._closing:
            return
        if phrase is not None:
            self._opted_out = True
            self.speaker.owe(timing)
            await self._say_then_finish(GOODBYE, "opt_out")
        elif turns.turns_exhausted(self.config.conversation.max_turns, self.user_turns):
            await self._say_then_finish(None, "max_turns")
        elif self.config.mode is AgentMode.FULL_AI and self._may_reply(start):
            self._reply_task = asyncio.current_task()
            await self._reply(timing, spec)

    def _messages(self) -> tuple[ChatMessage, ...]:
        return (ChatMessage("system", self.config.prompt_text or ""), *self._history)

    async def _produce(
        self,
        messages: tuple[ChatMessage, ...],
        timing: ReplyTiming,
        spoken: list[str],
        hold: asyncio.Event | None = None,
    ) -> str | None:
        """Ask the LLM and speak its reply (held until ``hold`` is set); the reply."""
        assert self.config.llm is not None
        llm = self.providers.get_llm(self.config.llm.provider_ref)
        if isinstance(llm, StreamingLLMProvider):
            timing.streamed = True
            deltas = llm.stream(messages, self.config.llm)
            return await self.speaker.say_stream(deltas, spoken, timing, hold)
        text = await llm.reply(messages, self.config.llm)
        timing.first_token = self.clock()
        await self.speaker.say(text, hold)
        return text

    async def _reply(self, timing: ReplyTiming, spec: preempt.Preemption | None) -> None:
        messages = self._messages()
        start, text = self.now_ms, None
        spoken: list[str] = []
        try:
            if spec is not None and spec.task and preempt.reusable(spec.messages, messages):
                timing, spoken = self.preempter.release(spec, timing), spec.spoken
                self.speaker.owe(timing)
                text = await spec.task  # written already: heard as soon as it is queued
            else:
                self.preempter.drop(spec)  # the callee said something else
                self.speaker.owe(timing)
                text = await self._produce(messages, timing, spoken)
        except CellError as exc:
            log.warning("LLM failed: %s", exc.message)
        finally:
            self._reply_task = None
            said = text.strip() if text is not None else " ".join(spoken)
            if said:
                self._history.append(ChatMessage("assistant", said))
                end = start + self.speaker.queued_ms() if text is not None else self.now_ms
                self._turn(Role.AGENT, said, start, max(end, start))

    async def _say(self, text: str) -> None:
        if not text or not self.speaker.can_speak:
            return
        start = self.now_ms
        if await self.speaker.say(text):
            self._turn(Role.AGENT, text, start, start + self.speaker.queued_ms())

    async def _say_then_finish(self, text: str | None, reason: str) -> None:
        await self._say(text or "")
        waited = 0
        while self.speaker.speaking and waited < DRAIN_LIMIT_MS:
            await asyncio.sleep(FRAME_MS / 1000)
            waited += FRAME_MS
        self._finish(reason)
