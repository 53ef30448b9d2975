"""The voice agent on a live call: hears 20 ms frames, speaks synthesised sentences.

It is the :class:`~agentcall.cell.media.session.CallAudio` of a SIP call. Each frame is read
by :class:`~agentcall.cell.media.hearing.Hearing` (VAD, in-band DTMF, beep, AMD); utterances
found by :func:`agentcall.cell.media.turns.listen` go to the ASR; in ``full_ai`` the
transcript goes to the LLM, whose reply is streamed into sentence-by-sentence synthesis
(:mod:`agentcall.cell.media.speaker`). ``conversation.*`` is honoured: opening line,
barge-in (``allow_interrupt``: the queue is emptied and the reply being written is
cancelled, LLM stream and TTS included), ``silence_timeout_ms``, ``max_turns``,
``max_pending_audio_chunks``; ``asr_only`` only listens.

Key presses (RFC 4733 through :meth:`VoiceAgent.on_dtmf`, in-band tones through the hearing)
become transcript entries ``DTMF <key>``; the cell's opt-out digits end the call like an
opt-out phrase. With answering-machine detection on, the opening line waits for the verdict:
a person hears it; a machine is hung up on, or gets it after its beep (reason
``answering_machine``). With ``asr.interim`` and a streaming ASR, interim hypotheses go to
``AgentSink.interim`` (and barge in); only the final result becomes a transcript turn, and
the reply is written while the end-of-turn wait runs (:mod:`agentcall.cell.media.preempt`).
Each reply is timed stage by stage (:mod:`agentcall.cell.media.stages`), the greeting from
the answer."""

from __future__ import annotations

import asyncio
import logging
import time
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
)
from agentcall.cell.agent.streaming import UtteranceStream
from agentcall.cell.audio.amd import Verdict
from agentcall.cell.audio.vad import EnergyVAD, VoiceDetector
from agentcall.cell.domain.model import AmdAction, Role, Turn
from agentcall.cell.media import preempt, turns
from agentcall.cell.media.hearing import Hearing, VoiceOptions
from agentcall.cell.media.rtp import FRAME_MS, PCM_BYTES_PER_FRAME
from agentcall.cell.media.speaker import ReplyTiming, Speaker, frames_of
from agentcall.cell.media.voice_turns import GOODBYE, Conversing

__all__ = ["AgentSink", "VoiceAgent", "frames_of"]

log = logging.getLogger("cell.voice")
LINE_HZ = 8000
RTP_KEY_HOLD_MS = 1000  # in-band tones this soon after an RFC 4733 event are the same press
LEAVE_AFTER_SILENCE_MS = 1500  # a machine without a beep: speak after this much silence
MACHINE_WAIT_MS = 30_000  # never wait longer than this for a machine's beep
ANSWERING_MACHINE = "answering_machine"


@dataclass
class AgentSink:
    """Where the agent reports: the cell's transcript/opt-out events and the call's end."""

    transcript: Callable[[Turn], None]
    opt_out: Callable[[str | None, int], None]
    finish: Callable[[str], None]  # reason: opt_out, max_turns, silence_timeout, answering_machine
    # interim hypothesis (text, utterance start ms); never part of the final transcript
    interim: Callable[[str, int], None] | None = None


@dataclass
class VoiceAgent(Conversing):
    config: AgentConfig
    providers: ProviderRegistry
    sink: AgentSink
    detector: OptOutDetector = field(default_factory=OptOutDetector)
    options: VoiceOptions = field(default_factory=VoiceOptions)
    vad: VoiceDetector = field(default_factory=EnergyVAD)
    clock: Callable[[], float] = time.monotonic
    now_ms: int = 0
    user_turns: int = 0
    finished: str | None = None
    interims: int = 0
    digits: list[str] = field(default_factory=list)
    answering_machine: bool = False
    _listening: turns.Listening = field(default_factory=turns.Listening)
    _utterance: bytearray = field(default_factory=bytearray)
    _history: list[ChatMessage] = field(default_factory=list)
    _last_activity_ms: int = 0
    _last_voiced_ms: int = 0
    _last_voiced_t: float = 0.0
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _turn_no: int = 0
    _closing: bool = False
    _stream: UtteranceStream | None = None
    _reply_task: asyncio.Task[Any] | None = None
    _opening_due: bool = False
    _replies_from_ms: int = 0  # utterances that started earlier get no reply (AMD)
    _waiting_for_beep_since: int | None = None
    _rtp_key_ms: int = -RTP_KEY_HOLD_MS
    _opted_out: bool = False
    _answered_t: float = 0.0

    def __post_init__(self) -> None:
        self.hearing = Hearing(self.vad, self.options)
        self.speaker = Speaker(self.config, self.providers, self.clock)
        silence = self.config.conversation.silence_timeout_ms
        self._end_ms = turns.end_of_utterance_ms(self.options.end_of_utterance_ms, silence)
        self.preempter = preempt.Preempter(self._preempt)

    # -- CallAudio --------------------------------------------------------------
    def next_outbound(self) -> bytes | None:
        frame = self.speaker.next_frame()
        if frame is not None:
            self._last_activity_ms = self.now_ms
        return frame

    def on_inbound(self, pcm: bytes | None) -> None:
        self.now_ms += FRAME_MS
        reading = self.hearing.hear(pcm, self.now_ms)
        if reading.voiced:
            self._last_activity_ms = self._last_voiced_ms = self.now_ms
            self._last_voiced_t = self.clock()
        before = self._listening
        heard = turns.listen(before, reading.voiced, self.now_ms, end_ms=self._end_ms)
        self._listening = heard.state
        if heard.state.in_utterance or heard.utterance_done:
            self._hear_frame(pcm or bytes(PCM_BYTES_PER_FRAME), heard.speech_started)
        elif before.in_utterance:
            self._drop_utterance()  # a click or a cough
        allow = self.config.conversation.allow_interrupt
        if turns.should_barge_in(allow, self.speaking, turns.onset(before, heard.state)):
            self.interrupt()
        if heard.utterance_done:
            self._end_utterance()
        else:
            self._speculate()
        if reading.key is not None and self.now_ms - self._rtp_key_ms > RTP_KEY_HOLD_MS:
            self._digit(reading.key)
        if reading.verdict is not None:
            self._on_verdict(reading.verdict)
        self._machine_tick(reading.beep_ended_at_ms)
        timeout = self.config.conversation.silence_timeout_ms
        if not self.speaking and turns.silence_expired(
            timeout, self._last_activity_ms, self.now_ms
        ):
            self._finish("silence_timeout")

    def on_dtmf(self, key: str) -> None:
        """An RFC 4733 key press (reported once per press by the media session)."""
        self._rtp_key_ms = self.now_ms
        self._digit(key)

    @property
    def speaking(self) -> bool:
        return self.speaker.speaking

    @property
    def dropped_chunks(self) -> int:
        return self.speaker.dropped_chunks

    @property
    def reply_timings(self) -> list[ReplyTiming]:
        return self.speaker.timings

    def interrupt(self) -> None:
        """Barge-in: stop talking now, and stop writing and synthesising the reply."""
        self.speaker.stop()
        self.preempter.drop()
        if self._reply_task is not None and not self._reply_task.done():
            self._reply_task.cancel()

    # -- keys and machines ---------------------------------------------------------
    def _digit(self, key: str) -> None:
        self.digits.append(key)
        self._last_activity_ms = self.now_ms
        self._turn(Role.USER, f"DTMF {key}", self.now_ms, self.now_ms)
        if key in self.options.opt_out_digits and not self._opted_out and not self._closing:
            self._opted_out = True
            self.sink.opt_out(f"dtmf {key}", self.now_ms)
            self.interrupt()
            self._spawn(self._say_then_finish(GOODBYE, "opt_out"))

    def _on_verdict(self, verdict: Verdict) -> None:
        log.info("answering-machine detection: %s (%s)", verdict, self.hearing.amd.why)
        if verdict is not Verdict.MACHINE:
            self._replies_from_ms = self.now_ms
            if self._opening_due:
                self._opening_due = False
                self.speaker.owe(ReplyTiming(self._answered_t), greeting=True)
                self._spawn(self._say(self.config.conversation.opening or ""))
            return
        self.answering_machine = True
        self._opening_due = False
        self.interrupt()
        if self.options.amd is AmdAction.HANGUP:
            self._finish(ANSWERING_MACHINE)
        else:
            self._waiting_for_beep_since = self.now_ms

    def _machine_tick(self, beep_ended_at_ms: int | None) -> None:
        since = self._waiting_for_beep_since
        if since is None or self.finished is not None:
            return
        quiet = self.hearing.beep.hz is None and not self._listening.in_utterance
        silent_ms = self.now_ms - max(self._last_voiced_ms, since)
        if (
            beep_ended_at_ms is not None
            or (quiet and silent_ms >= LEAVE_AFTER_SILENCE_MS)
            or self.now_ms - since >= MACHINE_WAIT_MS
        ):
            self._waiting_for_beep_since = None
            opening = self.config.conversation.opening or None
            self._spawn(self._say_then_finish(opening, ANSWERING_MACHINE))

    def _may_reply(self, start_ms: int) -> bool:
        if self.answering_machine or self._opening_due:
            return False
        return start_ms >= self._replies_from_ms or not self.hearing.detecting_machines

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

        return UtteranceStream(
            recognizer, LINE_HZ, lambda text: self._on_interim(text, start_ms), start_ms=start_ms
        )

    def _on_interim(self, text: str, start_ms: int) -> None:
        self.interims += 1
        log.debug("interim hypothesis at %d ms: %r", self.now_ms, text)
        if self.sink.interim is not None:
            self.sink.interim(text, start_ms)
        if turns.interim_barges_in(self.config.conversation.allow_interrupt, self.speaking, text):
            self.interrupt()  # barge-in on recognised words

    def _speculate(self) -> None:
        """Preemptive generation after this frame (see :mod:`~agentcall.cell.media.preempt`)."""
        stream, state = self._stream, self._listening
        pausing = state.in_utterance and state.silence_ms >= preempt.PAUSE_MS
        if stream is None or not pausing or not self._may_preempt(stream.start_ms, None):
            self.preempter.hear(False, pausing, None)  # no reply due: recognise at its pace
            return
        if state.silence_ms == preempt.PAUSE_MS:
            stream.flush()  # the callee just paused: a fresh hypothesis of all they said
        text = None if stream.flushing else stream.hypothesis
        self.preempter.hear(self._may_preempt(stream.start_ms, text), True, text)

    def _may_preempt(self, start_ms: int, text: str | None) -> bool:
        c = self.config
        if not self.options.preemptive or c.mode is not AgentMode.FULL_AI or self._closing:
            return False
        if self._opted_out or self._listening.speech_ms < turns.MIN_UTTERANCE_MS:
            return False
        if turns.turns_exhausted(c.conversation.max_turns, self.user_turns + 1):
            return False
        return self._may_reply(start_ms) and self.detector.detect(text or "") is None

    def _preempt(self, text: str) -> preempt.Preemption:
        messages = (*self._messages(), ChatMessage("user", text.strip()))
        found = preempt.Preemption(text, messages, ReplyTiming(speech_end=self._last_voiced_t))
        found.task = self._spawn(self._produce(messages, found.timing, found.spoken, found.hold))
        return found

    def _end_utterance(self) -> None:
        timing = ReplyTiming(speech_end=self._last_voiced_t, utterance_end=self.clock())
        if self._stream is not None:
            self._stream.end(self.now_ms)
            spec = self.preempter.take()
            self._spawn(self._streamed_turn(self._stream, timing, spec))
            self._stream = None
            return
        pcm, self._utterance = bytes(self._utterance), bytearray()
        self._spawn(self._user_turn(pcm, self.now_ms - len(pcm) // 16, self.now_ms, timing))

    def _drop_utterance(self) -> None:
        self.preempter.drop()
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None
        self._utterance = bytearray()

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> None:
        self._answered_t = self.clock()
        opening = self.config.conversation.opening
        if self.config.mode is AgentMode.FULL_AI and opening:
            if self.hearing.detecting_machines:
                self._opening_due = True  # a person hears it once the verdict is in
            else:
                self.speaker.owe(ReplyTiming(self._answered_t), greeting=True)  # timed from here
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
        self.interrupt()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace_s)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
