"""The voice agent with streaming ASR: interim hypotheses only when asr.interim is
true, never in the final transcript (D-RES-1: call.result carries final turns only),
and barge-in on recognised words when conversation.allow_interrupt is true."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from agentcall.cell.agent.config import ASRConfig, parse_agent_config
from agentcall.cell.agent.mock import MockASR, MockLLM, MockRecognizer, MockTTS
from agentcall.cell.agent.providers import ProviderRegistry, Recognizer
from agentcall.cell.domain.model import Role, Turn
from agentcall.cell.media import turns
from agentcall.cell.media.voice import AgentSink, VoiceAgent
from tests.support.agent_configs import FULL_AI
from tests.unit.cell.test_media_voice import ticks


class Recorder:
    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.interims: list[tuple[str, int]] = []
        self.finished: list[str] = []

    def sink(self) -> AgentSink:
        return AgentSink(
            transcript=self.turns.append,
            opt_out=lambda phrase, at: None,
            finish=self.finished.append,
            interim=lambda text, start: self.interims.append((text, start)),
        )


class WobblyASR(MockASR):
    """Interim hypotheses that are not prefixes of the final text."""

    async def open_recognizer(self, config: ASRConfig, sample_rate_hz: int) -> Recognizer:
        class Wobbly(MockRecognizer):
            async def accept(self, pcm: bytes) -> str:
                await super().accept(pcm)
                return ["you'd", "utah", "utah oh really"][min(2, self.heard_ms // 240 - 1)]

            async def finish(self, pcm: bytes) -> str:
                return "I would like to know more"

        return Wobbly("", sample_rate_hz)


def make(asr: MockASR, interim: bool | None, **conv: Any) -> tuple[VoiceAgent, Recorder]:
    raw = copy.deepcopy(FULL_AI)
    raw["conversation"].update({"opening": "", "silence_timeout_ms": 60_000, **conv})
    if interim is None:
        raw["asr"].pop("interim")
    else:
        raw["asr"]["interim"] = interim
    registry = ProviderRegistry(asr={"mock": asr}, llm={"mock": MockLLM()}, tts={"mock": MockTTS()})
    rec = Recorder()
    return VoiceAgent(parse_agent_config(raw), registry, rec.sink()), rec


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.001)


async def test_interim_true_reports_word_prefixes_then_one_final_turn() -> None:
    agent, rec = make(MockASR(script=["yes please call me later"]), interim=True)
    await ticks(agent, 1000, voiced=True)
    await ticks(agent, 700)  # 500 ms of silence ends the utterance
    await settle()
    texts = [t for t, _ in rec.interims]
    assert texts[:3] == ["yes", "yes please", "yes please call"]
    assert all(start == rec.interims[0][1] for _, start in rec.interims)
    assert agent.interims == len(rec.interims)
    user = [t for t in rec.turns if t.role is Role.USER]
    assert [t.text for t in user] == ["yes please call me later"]
    assert user[0].start_ms == rec.interims[0][1] == 0
    await agent.aclose()


@pytest.mark.parametrize("interim", [False, None])
async def test_no_interim_unless_asr_interim_is_true(interim: bool | None) -> None:
    agent, rec = make(MockASR(script=["yes please call me later"]), interim=interim)
    await ticks(agent, 1000, voiced=True)
    await ticks(agent, 700)
    await settle()
    assert rec.interims == [] and agent.interims == 0
    assert [t.text for t in rec.turns if t.role is Role.USER] == ["yes please call me later"]
    await agent.aclose()


async def test_d_res_1_final_transcript_is_never_an_interim_hypothesis() -> None:
    agent, rec = make(WobblyASR(), interim=True)
    await ticks(agent, 800, voiced=True)
    await ticks(agent, 700)
    await settle()
    assert [t for t, _ in rec.interims] == ["you'd", "utah", "utah oh really"]
    user = [t.text for t in rec.turns if t.role is Role.USER]
    assert user == ["I would like to know more"]
    assert all(t.text not in ("you'd", "utah", "utah oh really") for t in rec.turns)
    await agent.aclose()


async def test_a_click_is_dropped_without_a_turn() -> None:
    asr = MockASR(script=["noise", "real words"])
    agent, rec = make(asr, interim=True)
    await ticks(agent, 100, voiced=True)  # shorter than MIN_UTTERANCE_MS
    await ticks(agent, 700)
    await ticks(agent, 400, voiced=True)
    await ticks(agent, 700)
    await settle()
    assert [t.text for t in rec.turns if t.role is Role.USER] == ["real words"]
    await agent.aclose()


async def test_call_end_mid_utterance_still_gives_the_final() -> None:
    agent, rec = make(MockASR(script=["goodbye then"]), interim=True)
    await ticks(agent, 400, voiced=True)
    await agent.aclose()
    assert [t.text for t in rec.turns] == ["goodbye then"]


@pytest.mark.parametrize(("allow", "still_speaking"), [(True, False), (False, True)])
async def test_interim_words_barge_in_when_the_agent_starts_mid_utterance(
    allow: bool, still_speaking: bool
) -> None:
    """The callee was already talking when the agent's opening started (no energy
    onset to cut on): the first interim words stop the agent only if allowed."""
    agent, rec = make(
        MockASR(script=["hold on a second please"]),
        interim=True,
        allow_interrupt=allow,
        opening="This is a long opening sentence that takes a while.",
    )
    await ticks(agent, 100, voiced=True)  # speech starts while the agent is silent
    agent.start()  # the opening line starts mid-utterance
    await settle()
    assert agent.speaking
    await ticks(agent, 300, voiced=True)
    await settle()
    assert rec.interims, "an interim hypothesis arrived"
    assert agent.speaking is still_speaking
    await agent.aclose()


@pytest.mark.parametrize(
    ("allow", "speaking", "interim", "cut"),
    [
        (True, True, "hold on", True),
        (True, True, "  ", False),  # no words: no barge-in
        (True, False, "hold on", False),  # the agent is silent anyway
        (False, True, "hold on", False),
        (None, True, "hold on", False),  # absent allow_interrupt never interrupts
    ],
)
def test_interim_barges_in_table(
    allow: bool | None, speaking: bool, interim: str, cut: bool
) -> None:
    assert turns.interim_barges_in(allow, speaking, interim) is cut
