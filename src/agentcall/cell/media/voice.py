"""The voice agent on a live call: hears 20 ms frames, speaks synthesised sentences.

It is the :class:`~agentcall.cell.media.session.CallAudio` of a SIP call. Utterances found
by :func:`agentcall.cell.media.turns.listen` go to the ASR provider; in ``full_ai`` mode the
transcript goes to the LLM and the reply, split into sentences of at most
``sentence_max_chars``, to the TTS. ``conversation.*`` limits are honoured:
opening line, barge-in (``allow_interrupt``), ``silence_timeout_ms``,
``max_turns``, ``max_pending_audio_chunks``; ``asr_only`` only listens.

When ``asr.interim`` is true and the provider streams, each utterance is recognised
as it arrives (:class:`~agentcall.cell.agent.streaming.UtteranceStream`): interim hypotheses
go to ``AgentSink.interim`` and, with ``allow_interrupt``, stop the agent's speech;
only the final result becomes a transcript turn. Otherwise the whole utterance is
transcribed once it ended.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentcall.cell.agent.config import AgentConfig, AgentMode
from agentcall.cell.agent.optout import OptOutDetector
from agentcall.cell.agent.providers import (
    ChatMessage,
    ProviderRegistry,
    Recognizer,
    StreamingASRProvider,
    Utterance,
)
from agentcall.cell.agent.streaming import UtteranceStream
from agentcall.cell.audio.resample import resample
from agentcall.cell.errors import CellError
from agentcall.cell.media import turns
from agentcall.cell.media.rtp import FRAME_MS, PCM_BYTES_PER_FRAME
from agentcall.cell.model import Role, Turn

log = logging.getLogger("cell.voice")
LINE_HZ = 8000
GOODBYE = "Understood. We will not call you again. Goodbye."
DRAIN_LIMIT_MS = 10_000
ASR_TIMEOUT_MS = 10_000  # final result after the end of an utterance (asr.timeout_ms wins)


@dataclass
class AgentSink:
    """Where the agent reports: the cell's transcript/opt-out events and the call's end."""

    transcript: Callable[[Turn], None]
    opt_out: Callable[[str | None, int], None]
    finish: Callable[[str], None]  # reason code: opt_out, max_turns, silence_timeout
    # interim hypothesis (text, utterance start ms); never part of the final transcript
    interim: Callable[[str, int], None] | None = None


def frames_of(pcm: bytes) -> list[bytes]:
    pad = -len(pcm) % PCM_BYTES_PER_FRAME
    pcm += bytes(pad)
    return [pcm[i : i + PCM_BYTES_PER_FRAME] for i in range(0, len(pcm), PCM_BYTES_PER_FRAME)]


@dataclass
class VoiceAgent:
    config: AgentConfig
    providers: ProviderRegistry
    sink: AgentSink
    detector: OptOutDetector = field(default_factory=OptOutDetector)
    now_ms: int = 0
    user_turns: int = 0
    finished: str | None = None
    dropped_chunks: int = 0
    interims: int = 0
    _chunks: deque[deque[bytes]] = field(default_factory=deque)
    _listening: turns.Listening = field(default_factory=turns.Listening)
    _utterance: bytearray = field(default_factory=bytearray)
    _history: list[ChatMessage] = field(default_factory=list)
    _last_activity_ms: int = 0
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _turn_no: int = 0
    _closing: bool = False
    _stream: UtteranceStream | None = None

    # -- CallAudio --------------------------------------------------------------
    def next_outbound(self) -> bytes | None:
        while self._chunks and not self._chunks[0]:
            self._chunks.popleft()
        if not self._chunks:
            return None
        self._last_activity_ms = self.now_ms
        return self._chunks[0].popleft()

    def on_inbound(self, pcm: bytes | None) -> None:
        self.now_ms += FRAME_MS
        voiced = pcm is not None and turns.frame_rms(pcm) > turns.SPEECH_RMS
        was_in_utterance = self._listening.in_utterance
        heard = turns.listen(self._listening, voiced, self.now_ms)
        self._listening = heard.state
        if heard.state.in_utterance or heard.utterance_done:
            self._hear_frame(pcm or bytes(PCM_BYTES_PER_FRAME), heard.speech_started)
        elif was_in_utterance:
            self._drop_utterance()  # a click or a cough
        if voiced:
            self._last_activity_ms = self.now_ms
        if turns.should_barge_in(
            self.config.conversation.allow_interrupt, self.speaking, heard.speech_started
        ):
            self._chunks.clear()  # barge-in: stop talking
        if heard.utterance_done:
            self._end_utterance()
        timeout = self.config.conversation.silence_timeout_ms
        if not self.speaking and turns.silence_expired(
            timeout, self._last_activity_ms, self.now_ms
        ):
            self._finish("silence_timeout")

    @property
    def speaking(self) -> bool:
        return any(self._chunks)

    # -- utterances ----------------------------------------------------------------
    def _streaming_asr(self) -> StreamingASRProvider | None:
        """The provider to stream to, when the task asks for interim results."""
        if self.config.asr.interim is not True:
            return None
        provider = self.providers.get_asr(self.config.asr.provider_ref)
        return provider if isinstance(provider, StreamingASRProvider) else None

    def _hear_frame(self, pcm: bytes, started: bool) -> None:
        if started:
            asr = self._streaming_asr()
            if asr is not None:
                self._stream = self._open_stream(asr, self.now_ms - FRAME_MS)
        if self._stream is not None:
            self._stream.feed(pcm)
        else:
            self._utterance += pcm

    def _open_stream(self, asr: StreamingASRProvider, start_ms: int) -> UtteranceStream:
        config = self.config.asr

        async def recognizer() -> Recognizer:
            return await asr.open_recognizer(config, LINE_HZ)

        stream = UtteranceStream(
            recognizer, LINE_HZ, lambda text: self._on_interim(text, start_ms), start_ms=start_ms
        )
        self._spawn(self._streamed_turn(stream))
        return stream

    def _on_interim(self, text: str, start_ms: int) -> None:
        self.interims += 1
        log.debug("interim hypothesis at %d ms: %r", self.now_ms, text)
        if self.sink.interim is not None:
            self.sink.interim(text, start_ms)
        if turns.interim_barges_in(self.config.conversation.allow_interrupt, self.speaking, text):
            self._chunks.clear()  # barge-in on recognised words

    def _end_utterance(self) -> None:
        if self._stream is not None:
            self._stream.end(self.now_ms)
            self._stream = None
            return
        pcm, self._utterance = bytes(self._utterance), bytearray()
        self._spawn(self._user_turn(pcm, self.now_ms - len(pcm) // 16, self.now_ms))

    def _drop_utterance(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None
        self._utterance = bytearray()

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> None:
        opening = self.config.conversation.opening
        if self.config.mode is AgentMode.FULL_AI and opening:
            self._spawn(self._say(opening))

    async def aclose(self, grace_s: float = 2.0) -> None:
        """The call ended: transcribe what the callee was still saying, give running
        turns ``grace_s`` to finish (the final transcript), then cancel the rest."""
        self._closing = True  # transcribe only: nobody hears a reply any more
        if self._listening.speech_ms >= turns.MIN_UTTERANCE_MS:
            self._end_utterance()
        else:
            self._drop_utterance()
        self._listening = turns.Listening()
        self._chunks.clear()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace_s)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _finish(self, reason: str) -> None:
        if self.finished is None:
            self.finished = reason
            self.sink.finish(reason)

    def _turn(self, role: Role, text: str, start: int, end: int) -> None:
        self._turn_no += 1
        n = self._turn_no
        self.sink.transcript(Turn(f"turn-{n}", f"segment-{n}", role, text, start, end))

    # -- the conversation -------------------------------------------------------------
    async def _user_turn(self, pcm: bytes, start: int, end: int) -> None:
        try:
            heard = await self.providers.get_asr(self.config.asr.provider_ref).transcribe(
                Utterance(pcm=pcm, sample_rate_hz=LINE_HZ), self.config.asr
            )
        except CellError as exc:
            log.warning("ASR failed: %s", exc.message)
            return
        await self._heard(heard.text, start, end)

    async def _streamed_turn(self, stream: UtteranceStream) -> None:
        timeout_s = (self.config.asr.timeout_ms or ASR_TIMEOUT_MS) / 1000
        try:
            text = await stream.result(timeout_s)
        except CellError as exc:
            log.warning("ASR failed: %s", exc.message)
            return
        if text is not None:
            await self._heard(text, stream.start_ms, stream.end_ms)

    async def _heard(self, text: str, start: int, end: int) -> None:
        """The callee's final words of one utterance: transcript, opt-out, reply."""
        text = text.strip()
        if not text:
            return
        self._turn(Role.USER, text, start, end)
        self.user_turns += 1
        self._history.append(ChatMessage("user", text))
        phrase = self.detector.detect(text)
        if self._closing:
            if phrase is not None:
                self.sink.opt_out(phrase, end)
            return
        if phrase is not None:
            self.sink.opt_out(phrase, end)
            await self._say_then_finish(GOODBYE, "opt_out")
        elif turns.turns_exhausted(self.config.conversation.max_turns, self.user_turns):
            await self._say_then_finish(None, "max_turns")
        elif self.config.mode is AgentMode.FULL_AI:
            await self._reply()

    async def _reply(self) -> None:
        assert self.config.llm is not None
        system = [ChatMessage("system", self.config.prompt_text or "")]
        try:
            llm = self.providers.get_llm(self.config.llm.provider_ref)
            text = await llm.reply(system + self._history, self.config.llm)
        except CellError as exc:
            log.warning("LLM failed: %s", exc.message)
            return
        self._history.append(ChatMessage("assistant", text))
        await self._say(text)

    async def _say(self, text: str) -> None:
        if self.config.tts is None or self.config.mode is AgentMode.ASR_ONLY:
            return
        start = self.now_ms
        tts = self.providers.get_tts(self.config.tts.provider_ref)
        limit = self.config.conversation.max_pending_audio_chunks
        for sentence in turns.split_sentences(text, self.config.conversation.sentence_max_chars):
            try:
                speech = await tts.synthesize(sentence, self.config.tts)
            except CellError as exc:
                log.warning("TTS failed: %s", exc.message)
                return
            pcm = speech.pcm
            if speech.sample_rate_hz != LINE_HZ:
                pcm = resample(pcm, speech.sample_rate_hz, LINE_HZ)
            if limit is not None and len(self._chunks) >= limit:
                self.dropped_chunks += 1  # back-pressure: never queue unbounded audio
                continue
            self._chunks.append(deque(frames_of(pcm)))
        self._turn(Role.AGENT, text, start, start + self._queued_ms())

    def _queued_ms(self) -> int:
        return sum(len(c) for c in self._chunks) * FRAME_MS

    async def _say_then_finish(self, text: str | None, reason: str) -> None:
        if text:
            await self._say(text)
        waited = 0
        while self.speaking and waited < DRAIN_LIMIT_MS:
            await asyncio.sleep(FRAME_MS / 1000)
            waited += FRAME_MS
        self._finish(reason)
