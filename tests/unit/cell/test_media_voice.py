"""The voice agent on live audio honours conversation.* (opening, barge-in, silence
timeout, max turns, opt-out, max_pending_audio_chunks) and asr_only."""

from __future__ import annotations

import asyncio
import copy
from array import array
from typing import Any

from agentcall.cell.agent.config import ASRConfig, parse_agent_config
from agentcall.cell.agent.mock import MockLLM, MockTTS
from agentcall.cell.agent.providers import ProviderRegistry, Transcription, Utterance
from agentcall.cell.domain.model import Role, Turn
from agentcall.cell.media.voice import AgentSink, VoiceAgent
from tests.support.agent_configs import FULL_AI

VOICED = array("h", [6000, -6000] * 80).tobytes()


class ScriptedASR:
    """Returns the next scripted text for each utterance (a port fake)."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.heard: list[int] = []

    async def transcribe(self, utterance: Utterance, config: ASRConfig) -> Transcription:
        self.heard.append(len(utterance.pcm))
        return Transcription(self.texts.pop(0) if self.texts else "")


class Reply3:
    async def reply(self, messages: Any, config: Any) -> str:
        return "One. Two. Three."


class Recorder:
    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.opt_outs: list[tuple[str | None, int]] = []
        self.finished: list[str] = []

    def sink(self) -> AgentSink:
        return AgentSink(
            transcript=self.turns.append,
            opt_out=lambda phrase, at: self.opt_outs.append((phrase, at)),
            finish=self.finished.append,
        )


def make(
    asr: ScriptedASR, llm: Any = None, mode: str = "full_ai", **conv: Any
) -> tuple[VoiceAgent, Recorder]:
    raw = copy.deepcopy(FULL_AI)
    raw["conversation"].update({"opening": "Hello there.", "silence_timeout_ms": 60_000, **conv})
    if mode == "asr_only":
        raw["mode"] = "asr_only"
        for key in ("llm", "prompt", "tts"):
            raw.pop(key)
    registry = ProviderRegistry(
        asr={"mock": asr}, llm={"mock": llm or MockLLM()}, tts={"mock": MockTTS()}
    )
    rec = Recorder()
    return VoiceAgent(parse_agent_config(raw), registry, rec.sink()), rec


async def ticks(agent: VoiceAgent, ms: int, voiced: bool = False) -> int:
    """Run the media clock for ``ms``; returns how many frames the agent sent."""
    sent = 0
    for _ in range(ms // 20):
        sent += agent.next_outbound() is not None
        agent.on_inbound(VOICED if voiced else None)
        await asyncio.sleep(0.0005)
    return sent


async def test_opening_is_spoken_then_a_turn_gets_a_reply() -> None:
    agent, rec = make(ScriptedASR("I would like to know more"))
    agent.start()
    assert await ticks(agent, 100) > 0  # opening audio flows
    await ticks(agent, 2000)
    await ticks(agent, 600, voiced=True)
    await ticks(agent, 800)
    roles = [(t.role, t.text) for t in rec.turns]
    assert roles[0] == (Role.AGENT, "Hello there.")
    assert roles[1] == (Role.USER, "I would like to know more")
    assert roles[2][0] is Role.AGENT and "know more" in roles[2][1]
    await agent.aclose()


async def test_barge_in_stops_the_agent_only_when_allowed() -> None:
    for allow, expect_speaking in ((True, False), (False, True)):
        agent, _ = make(ScriptedASR(), allow_interrupt=allow)
        agent.start()
        await ticks(agent, 60)
        assert agent.speaking
        await ticks(agent, 40, voiced=True)
        assert agent.speaking is expect_speaking
        await agent.aclose()


async def test_opt_out_says_goodbye_and_ends() -> None:
    agent, rec = make(ScriptedASR("please stop calling me"))
    await ticks(agent, 400, voiced=True)
    await ticks(agent, 4000)  # the goodbye plays out
    for _ in range(100):  # the agent checks every 20 ms that its queue drained
        if rec.finished:
            break
        await asyncio.sleep(0.01)
    assert rec.opt_outs and rec.opt_outs[0][0] == "stop calling"
    assert rec.finished == ["opt_out"]
    assert rec.turns[-1].text.startswith("Understood")
    await agent.aclose()


async def test_max_turns_ends_the_call() -> None:
    agent, rec = make(ScriptedASR("first", "second"), max_turns=1)
    await ticks(agent, 400, voiced=True)
    await ticks(agent, 800)
    assert rec.finished == ["max_turns"]
    await agent.aclose()


async def test_silence_timeout() -> None:
    agent, rec = make(ScriptedASR(), silence_timeout_ms=500, opening="")
    await ticks(agent, 480)
    assert rec.finished == []
    await ticks(agent, 60)
    assert rec.finished == ["silence_timeout"]
    await agent.aclose()


async def test_pending_audio_is_bounded() -> None:
    agent, rec = make(ScriptedASR("hi"), llm=Reply3(), opening="", max_pending_audio_chunks=1)
    await ticks(agent, 400, voiced=True)
    await ticks(agent, 700)
    assert agent.dropped_chunks == 2
    assert rec.turns[-1].text == "One. Two. Three."
    await agent.aclose()


async def test_asr_only_listens_and_never_speaks() -> None:
    asr = ScriptedASR("just listening")
    agent, rec = make(asr, mode="asr_only")
    agent.start()
    sent = await ticks(agent, 400, voiced=True) + await ticks(agent, 800)
    assert sent == 0
    assert [(t.role, t.text) for t in rec.turns] == [(Role.USER, "just listening")]
    await agent.aclose()


async def test_words_cut_by_the_end_of_the_call_are_still_transcribed() -> None:
    asr = ScriptedASR("goodbye then")
    agent, rec = make(asr, opening="")
    await ticks(agent, 400, voiced=True)  # call ends mid-utterance
    await agent.aclose()
    assert [t.text for t in rec.turns] == ["goodbye then"]
