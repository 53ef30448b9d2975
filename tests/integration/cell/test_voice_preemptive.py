"""Preemptive generation against the OpenAI-compatible stub over real HTTP: the callee
pauses (the agent asks the LLM with the words so far), speaks again before the end of
the turn (that request's stream is closed), and the reply heard answers the whole
utterance, asked once more with the final transcript."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from agentcall.cell.agent.config import parse_agent_config
from agentcall.cell.agent.mock import MockTTS
from agentcall.cell.agent.providers import ProviderRegistry
from agentcall.cell.agent.providers_openai import OpenAIChatLLM, OpenAISettings
from agentcall.cell.domain.model import Role, Turn
from agentcall.cell.media.rtp import PCM_BYTES_PER_FRAME
from agentcall.cell.media.voice import AgentSink, VoiceAgent
from tests.integration.cell.llm_stub import StubState, llm_stub
from tests.support.agent_configs import FULL_AI
from tests.support.voiced_asr import VoicedWordsASR

pytestmark = pytest.mark.integration

UTTERANCE = "I want the red one not the blue one"
VOICED = b"\x40\x1f\xc0\xe0" * (PCM_BYTES_PER_FRAME // 4)  # a loud square wave


def echo(body: dict[str, Any]) -> str:
    return f"Sure, you said {body['messages'][-1]['content']}. Anything else?"


async def ticks(agent: VoiceAgent, ms: int, voiced: bool = False) -> None:
    """The media clock at its real pace (20 ms per frame)."""
    for _ in range(ms // 20):
        agent.next_outbound()
        agent.on_inbound(VOICED if voiced else None)
        await asyncio.sleep(0.02)


def make_agent(url: str, seen: list[Turn]) -> tuple[VoiceAgent, OpenAIChatLLM]:
    raw = copy.deepcopy(FULL_AI)
    raw["llm"]["provider_ref"] = "stub"
    raw["conversation"].update({"opening": "", "silence_timeout_ms": 60_000})
    llm = OpenAIChatLLM(OpenAISettings(url, default_model="stub"))
    registry = ProviderRegistry(
        asr={"mock": VoicedWordsASR(UTTERANCE)}, llm={"stub": llm}, tts={"mock": MockTTS()}
    )
    sink = AgentSink(seen.append, lambda p, at: None, lambda r: None)
    return VoiceAgent(parse_agent_config(raw), registry, sink), llm


async def test_a_resumed_utterance_cancels_the_speculative_request_and_the_reply_answers_all() -> (
    None
):
    state = StubState(ttft_s=0.1, tokens_per_s=40, reply_to=echo)
    seen: list[Turn] = []
    with llm_stub(state) as (url, state):
        agent, llm = make_agent(url, seen)
        await ticks(agent, 600, voiced=True)  # "I want the"
        await ticks(agent, 300)  # a pause shorter than the 500 ms end-of-turn wait
        await ticks(agent, 1200, voiced=True)  # the callee goes on
        await ticks(agent, 700)
        for _ in range(200):
            if any(t.role is Role.AGENT for t in seen):
                break
            await ticks(agent, 20)
        for _ in range(50):  # the stub notices the closed stream on its next write
            if state.aborted:
                break
            await asyncio.sleep(0.05)
        await agent.aclose()
        await llm.aclose()
    asked = [r["messages"][-1]["content"] for r in state.requests]
    assert asked == ["I want the", UTTERANCE]
    assert state.aborted == 1  # the speculative stream was closed unread
    assert agent.preempter.counts() == {"started": 2, "used": 1, "cancelled": 1}
    replies = [t.text for t in seen if t.role is Role.AGENT]
    assert replies == [echo({"messages": [{"content": UTTERANCE}]})]
    assert agent.reply_timings and agent.reply_timings[0].reply_ms is not None
