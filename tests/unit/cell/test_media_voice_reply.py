"""The voice agent's reply is streamed (first sentence spoken while the LLM still
writes), barge-in cancels the LLM stream and the synthesis at once, reply latency is
measured per turn, key presses are transcript entries (opt-out digits end the call),
and answering machines are hung up on or get the opening line after the beep."""

from __future__ import annotations

import asyncio
import copy
from array import array
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from agentcall.cell.agent.config import ASRConfig, LLMConfig, parse_agent_config
from agentcall.cell.agent.mock import MockTTS
from agentcall.cell.agent.providers import ChatMessage, ProviderRegistry, Transcription, Utterance
from agentcall.cell.domain.model import AmdAction, Role, Turn
from agentcall.cell.media.hearing import VoiceOptions
from agentcall.cell.media.voice import AgentSink, VoiceAgent
from tests.support.agent_configs import FULL_AI
from tests.support.audio_signals import sines

VOICED = array("h", [6000, -6000] * 80).tobytes()
BEEP = sines(1000)
KEY_9 = sines(852, 1477)


class OneLineASR:
    def __init__(self, text: str = "tell me more") -> None:
        self.text = text

    async def transcribe(self, utterance: Utterance, config: ASRConfig) -> Transcription:
        return Transcription(self.text)


class GatedLLM:
    """Streams its first sentence, then waits for ``go`` before the rest (a port fake)."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.closed = False
        self.calls = 0

    async def reply(self, messages: Sequence[ChatMessage], config: LLMConfig) -> str:
        return "First sentence. Second sentence."

    async def stream(
        self, messages: Sequence[ChatMessage], config: LLMConfig
    ) -> AsyncIterator[str]:
        self.calls += 1
        try:
            for token in ("First", " sentence.", " Second"):
                yield token
            await self.go.wait()
            yield " sentence."
        finally:
            self.closed = True


class SlowTTS(MockTTS):
    """Synthesis of "Second ..." never ends until cancelled."""

    def __init__(self) -> None:
        self.cancelled = False

    async def synthesize(self, text: str, config: Any) -> Any:
        if text.startswith("Second"):
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return await super().synthesize(text, config)


class Seen:
    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.opt_outs: list[tuple[str | None, int]] = []
        self.finished: list[str] = []

    def sink(self) -> AgentSink:
        return AgentSink(
            self.turns.append, lambda p, at: self.opt_outs.append((p, at)), self.finished.append
        )


def make(
    llm: Any = None, tts: Any = None, options: VoiceOptions | None = None, **conv: Any
) -> tuple[VoiceAgent, Seen]:
    raw = copy.deepcopy(FULL_AI)
    raw["asr"]["interim"] = False
    raw["conversation"].update({"opening": "Hello there.", "silence_timeout_ms": 60_000, **conv})
    registry = ProviderRegistry(
        asr={"mock": OneLineASR()}, llm={"mock": llm or GatedLLM()}, tts={"mock": tts or MockTTS()}
    )
    seen = Seen()
    agent = VoiceAgent(
        parse_agent_config(raw), registry, seen.sink(), options=options or VoiceOptions()
    )
    return agent, seen


async def feed(agent: VoiceAgent, ms: int, frame: bytes | None = None) -> int:
    """Run the media clock for ``ms`` hearing ``frame``; returns frames the agent sent."""
    sent = 0
    for _ in range(ms // 20):
        sent += agent.next_outbound() is not None
        agent.on_inbound(frame)
        await asyncio.sleep(0.0005)
    return sent


def agent_texts(seen: Seen) -> list[str]:
    return [t.text for t in seen.turns if t.role is Role.AGENT]


async def test_first_sentence_is_spoken_while_the_llm_still_writes() -> None:
    llm = GatedLLM()
    agent, seen = make(llm, opening="")
    await feed(agent, 400, VOICED)
    await feed(agent, 700)  # end of utterance (500 ms) and the first sentence
    assert agent.speaking and not llm.go.is_set()
    llm.go.set()
    await feed(agent, 3000)
    assert agent_texts(seen) == ["First sentence. Second sentence."]
    [timing] = agent.reply_timings
    assert timing.streamed and timing.reply_ms is not None
    marks = [timing.utterance_end, timing.transcribed, timing.first_token, timing.first_packet]
    assert all(m is not None for m in marks) and marks == sorted(marks)
    await agent.aclose()


@pytest.mark.parametrize("llm_done", [False, True])
async def test_barge_in_cancels_the_llm_stream_and_the_synthesis(llm_done: bool) -> None:
    """The callee talks over the first sentence while the LLM still writes (False) or
    while the second sentence is being synthesised (True): both stop at once."""
    llm, tts = GatedLLM(), SlowTTS()
    if llm_done:
        llm.go.set()
    agent, seen = make(llm, tts, opening="")
    await feed(agent, 400, VOICED)
    await feed(agent, 700)
    assert agent.speaking and llm.closed is llm_done
    sent = await feed(agent, 40, VOICED)  # 40 ms of the callee's voice
    await asyncio.sleep(0.01)
    assert not agent.speaking and sent <= 2
    assert llm.closed and tts.cancelled is llm_done
    assert agent_texts(seen) == ["First sentence."]  # what the callee heard
    await agent.aclose()


async def test_dtmf_keys_are_transcript_entries_and_opt_out_digits_end_the_call() -> None:
    agent, seen = make(options=VoiceOptions(opt_out_digits=frozenset("9")), opening="")
    agent.on_dtmf("5")
    await feed(agent, 60, KEY_9)  # the same key in-band right after an RFC 4733 event:
    agent.on_dtmf("9")
    await feed(agent, 60, KEY_9)  # one press, not two
    await feed(agent, 4000)
    for _ in range(100):
        if seen.finished:
            break
        await asyncio.sleep(0.01)
    users = [t.text for t in seen.turns if t.role is Role.USER]
    assert users == ["DTMF 5", "DTMF 9"] and agent.digits == ["5", "9"]
    assert seen.opt_outs == [("dtmf 9", 60)] and seen.finished == ["opt_out"]
    assert agent_texts(seen)[-1].startswith("Understood")
    await agent.aclose()


async def test_inband_dtmf_is_heard_once_per_press() -> None:
    agent, seen = make(opening="")
    await feed(agent, 100, KEY_9)
    await feed(agent, 60)
    await feed(agent, 60, sines(941, 1336))
    await feed(agent, 1000)
    assert [t.text for t in seen.turns] == ["DTMF 9", "DTMF 0"]
    assert agent.user_turns == 0  # tones are not utterances
    await agent.aclose()


async def test_machine_is_hung_up_on_without_a_word() -> None:
    agent, seen = make(options=VoiceOptions(amd=AmdAction.HANGUP))
    agent.start()
    sent = await feed(agent, 2500, VOICED)
    assert sent == 0 and seen.finished == ["answering_machine"]
    assert agent.answering_machine and agent.hearing.amd.why.startswith("greeting longer")
    await agent.aclose()


async def test_person_hears_the_opening_after_hello_and_no_reply_to_it() -> None:
    llm = GatedLLM()
    agent, seen = make(llm, options=VoiceOptions(amd=AmdAction.HANGUP))
    agent.start()
    assert await feed(agent, 300) == 0  # the opening waits for the verdict
    await feed(agent, 500, VOICED)  # "hello?"
    await feed(agent, 900)  # silence: a person
    assert agent.speaking and seen.finished == []
    await feed(agent, 1500)
    assert agent_texts(seen) == ["Hello there."] and llm.calls == 0
    assert [t.text for t in seen.turns if t.role is Role.USER] == ["tell me more"]
    await agent.aclose()


async def test_machine_gets_the_opening_after_the_beep() -> None:
    agent, seen = make(options=VoiceOptions(amd=AmdAction.LEAVE_MESSAGE))
    agent.start()
    assert await feed(agent, 3000, VOICED) == 0  # the greeting: a machine
    assert agent.answering_machine and seen.finished == []
    assert await feed(agent, 300, BEEP) == 0
    sent = await feed(agent, 2000)
    for _ in range(100):
        if seen.finished:
            break
        await asyncio.sleep(0.01)
    assert sent > 0 and agent_texts(seen) == ["Hello there."]
    assert seen.finished == ["answering_machine"]
    await agent.aclose()
