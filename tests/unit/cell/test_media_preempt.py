"""Preemptive generation: the decisions (pure, table-driven) and the voice agent that
writes its reply during the end-of-turn wait, releases it only for a final transcript
with the same words, and cancels it when the callee speaks again or said otherwise."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Sequence

import pytest

from agentcall.cell.agent.config import LLMConfig, parse_agent_config
from agentcall.cell.agent.mock import MockASR, MockLLM, MockTTS
from agentcall.cell.agent.providers import ChatMessage, ProviderRegistry
from agentcall.cell.domain.model import Role
from agentcall.cell.media import preempt, stages
from agentcall.cell.media.hearing import VoiceOptions
from agentcall.cell.media.preempt import Step
from agentcall.cell.media.voice import AgentSink, VoiceAgent
from tests.support.agent_configs import FULL_AI
from tests.support.voiced_asr import VoicedWordsASR
from tests.unit.cell.test_media_voice import ticks

pytestmark = pytest.mark.unit

SYSTEM = ChatMessage("system", "Be brief.")


@pytest.mark.parametrize(
    ("sent", "final", "same"),
    [
        ("what does the offer include", "What does the offer include?", True),
        ("what  does the offer,include", "what does the offer include", True),
        ("I don't know", "i DON'T know.", True),
        ("what does the offer", "what does the offer include", False),  # a word more
        ("what does the offer include", "what does the offer", False),  # a word less
        ("call me later", "call me never", False),
        ("", "", False),  # nothing said: nothing to answer
        ("?", "...", False),
    ],
)
def test_a_transcript_differs_only_trivially_in_case_punctuation_and_spaces(
    sent: str, final: str, same: bool
) -> None:
    assert preempt.same_words(sent, final) is same


@pytest.mark.parametrize(
    ("sent", "wanted", "ok"),
    [
        (
            [SYSTEM, ChatMessage("user", "yes please")],
            [SYSTEM, ChatMessage("user", "Yes, please.")],
            True,
        ),
        ([SYSTEM, ChatMessage("user", "yes")], [SYSTEM, ChatMessage("user", "yes please")], False),
        (  # the agent's last reply reached the history after the request was sent
            [SYSTEM, ChatMessage("user", "hi"), ChatMessage("user", "yes")],
            [
                SYSTEM,
                ChatMessage("user", "hi"),
                ChatMessage("assistant", "Hello."),
                ChatMessage("user", "yes"),
            ],
            False,
        ),
        (
            [SYSTEM, ChatMessage("user", "a")],
            [ChatMessage("system", "Other."), ChatMessage("user", "a")],
            False,
        ),
        ([SYSTEM, ChatMessage("assistant", "a")], [SYSTEM, ChatMessage("assistant", "a")], False),
        ([], [], False),
    ],
)
def test_a_speculative_reply_is_reused_only_for_the_same_conversation(
    sent: list[ChatMessage], wanted: list[ChatMessage], ok: bool
) -> None:
    assert preempt.reusable(sent, wanted) is ok


@pytest.mark.parametrize(
    ("allowed", "pausing", "hypothesis", "running", "expected"),
    [
        (True, True, "what does", None, Step.START),  # the callee paused: ask now
        (True, True, "what does", "What does?", Step.NONE),  # the same words: keep it
        (True, True, "what does it cost", "what does", Step.RESTART),  # newer words
        (True, False, "what does", "what does", Step.CANCEL),  # the callee speaks again
        (True, False, "what does", None, Step.NONE),
        (False, True, "stop calling me", "stop calling", Step.CANCEL),  # no reply due
        (False, True, "what", None, Step.NONE),
        (True, True, None, None, Step.NONE),  # a fresh hypothesis is on its way
        (True, True, None, "what", Step.NONE),
        (True, True, "  ", None, Step.NONE),  # no words yet
    ],
)
def test_what_speculation_does_after_a_frame(
    allowed: bool, pausing: bool, hypothesis: str | None, running: str | None, expected: Step
) -> None:
    assert preempt.step(allowed, pausing, hypothesis, running) is expected


class RecordingLLM(MockLLM):
    """The mock LLM, recording each streamed request's last user text and its end."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.closed_early = 0

    async def stream(
        self, messages: Sequence[ChatMessage], config: LLMConfig
    ) -> AsyncIterator[str]:
        self.asked.append(messages[-1].text)
        done = False
        try:
            async for delta in super().stream(messages, config):
                await asyncio.sleep(0.005)
                yield delta
            done = True
        finally:
            self.closed_early += not done


def agent_for(asr: MockASR, llm: MockLLM, preemptive: bool = True) -> tuple[VoiceAgent, list]:
    raw = copy.deepcopy(FULL_AI)
    raw["conversation"].update({"opening": "", "silence_timeout_ms": 60_000})
    registry = ProviderRegistry(asr={"mock": asr}, llm={"mock": llm}, tts={"mock": MockTTS()})
    seen: list = []
    sink = AgentSink(seen.append, lambda p, at: None, lambda r: None)
    options = VoiceOptions(preemptive=preemptive)
    return VoiceAgent(parse_agent_config(raw), registry, sink, options=options), seen


async def until_replied(agent: VoiceAgent, replies: int = 1) -> None:
    for _ in range(200):
        if len(agent.reply_timings) >= replies:
            return
        await ticks(agent, 20)
    raise AssertionError("no reply on the wire")


async def until_written(agent: VoiceAgent, seen: list) -> None:
    """Until the reply is written whole (its transcript turn is made)."""
    for _ in range(300):
        if agent_texts(seen):
            return
        await ticks(agent, 20)
    raise AssertionError("the reply was never written whole")


def agent_texts(seen: list) -> list[str]:
    return [t.text for t in seen if t.role is Role.AGENT]


async def test_the_reply_written_during_the_end_of_turn_wait_is_spoken_at_its_end() -> None:
    llm = RecordingLLM()
    agent, seen = agent_for(VoicedWordsASR("what does the offer include"), llm)
    await ticks(agent, 1000, voiced=True)
    await ticks(agent, 400)  # the reply is written while the 600 ms wait runs
    assert llm.asked == ["what does the offer include"]
    assert not agent.speaking  # held: nothing is said before the end of the turn
    await until_replied(agent)
    await until_written(agent, seen)
    assert llm.asked == ["what does the offer include"]  # one request, not two
    assert agent.preempter.counts() == {"started": 1, "used": 1, "cancelled": 0}
    timing = agent.reply_timings[0]
    assert timing.first_token is not None and timing.utterance_end is not None
    assert timing.first_token < timing.utterance_end
    found = stages.stage_ms(timing)
    assert found["llm_first_token"] == 0  # written before the turn was over
    added = sum(v for k, v in found.items() if k != stages.REPLY)
    assert abs(added - found[stages.REPLY]) <= 2  # each stage rounded to the ms
    await agent.aclose()
    assert agent_texts(seen) == ["Thank you. You said: what does the offer include"]


async def test_speech_resumed_in_the_wait_cancels_and_the_reply_answers_it_all() -> None:
    llm = RecordingLLM()
    agent, seen = agent_for(VoicedWordsASR("I want the red one not the blue one"), llm)
    await ticks(agent, 600, voiced=True)
    await ticks(agent, 300)  # a pause shorter than the end-of-turn wait
    assert llm.asked == ["I want the"]
    await ticks(agent, 1200, voiced=True)  # the callee goes on
    assert agent.preempter.cancelled == 1 and llm.closed_early == 1
    await ticks(agent, 700)
    await until_replied(agent)
    await until_written(agent, seen)
    await agent.aclose()
    assert llm.asked == ["I want the", "I want the red one not the blue one"]
    assert agent.preempter.counts() == {"started": 2, "used": 1, "cancelled": 1}
    assert agent_texts(seen) == ["Thank you. You said: I want the red one not the blue one"]


async def test_a_final_transcript_with_other_words_is_asked_again() -> None:
    llm = RecordingLLM()
    agent, seen = agent_for(VoicedWordsASR("call me later", final="call me never"), llm)
    await ticks(agent, 800, voiced=True)
    await ticks(agent, 700)
    await until_replied(agent)
    await until_written(agent, seen)
    await agent.aclose()
    assert llm.asked == ["call me later", "call me never"]
    assert agent.preempter.counts() == {"started": 1, "used": 0, "cancelled": 1}
    assert agent_texts(seen) == ["Thank you. You said: call me never"]  # never "later"


async def test_without_preemptive_generation_the_llm_is_asked_at_the_end_of_turn() -> None:
    llm = RecordingLLM()
    agent, seen = agent_for(VoicedWordsASR("what does it cost"), llm, preemptive=False)
    await ticks(agent, 800, voiced=True)
    await ticks(agent, 400)
    assert llm.asked == []
    await ticks(agent, 300)
    await until_replied(agent)
    await until_written(agent, seen)
    await agent.aclose()
    assert llm.asked == ["what does it cost"]
    assert agent.preempter.counts() == {"started": 0, "used": 0, "cancelled": 0}


async def test_an_opt_out_phrase_is_not_answered_ahead() -> None:
    llm = RecordingLLM()
    agent, seen = agent_for(VoicedWordsASR("please stop calling me"), llm)
    await ticks(agent, 800, voiced=True)
    await ticks(agent, 700)
    for _ in range(50):
        await ticks(agent, 20)
    await agent.aclose()
    assert llm.asked == [] and agent.preempter.started == 0
