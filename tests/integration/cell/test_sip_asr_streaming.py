"""Streaming ASR with the real pocketsphinx (asr.interim = true): espeak-ng speech,
through PCMA, fed to the voice agent frame by frame at the media clock's pace,
gives interim hypotheses while the callee speaks and one final turn per utterance
(D-RES-1: only the final text is in the transcript)."""

from __future__ import annotations

import asyncio
import copy
import shutil
import time

import pytest

from agentcall.cell.agent.config import TTSConfig, parse_agent_config
from agentcall.cell.agent.mock import MockLLM, MockTTS
from agentcall.cell.agent.providers import ProviderRegistry
from agentcall.cell.agent.providers_espeak import EspeakTTS
from agentcall.cell.agent.providers_sphinx import PocketsphinxASR
from agentcall.cell.domain.model import Turn
from agentcall.cell.media import g711
from agentcall.cell.media.rtp import PCM_BYTES_PER_FRAME
from agentcall.cell.media.voice import AgentSink, VoiceAgent, frames_of
from tests.support.agent_configs import ASR_ONLY

pytestmark = pytest.mark.integration

SILENCE = bytes(PCM_BYTES_PER_FRAME)


async def line_audio(text: str) -> bytes:
    speech = await EspeakTTS().synthesize(text, TTSConfig("espeak-ng", None, "en-us", 0.8, 5000))
    return g711.decode(g711.encode(speech.pcm))  # what the callee's phone line carries


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
async def test_pocketsphinx_streams_interim_hypotheses_before_the_final() -> None:
    raw = copy.deepcopy(ASR_ONLY)
    raw["asr"].update({"provider_ref": "pocketsphinx", "language": "en-US", "interim": True})
    raw["conversation"]["silence_timeout_ms"] = 60_000
    asr = PocketsphinxASR(preload=False, max_decoders=1)
    await asyncio.to_thread(asr.stream_pool.preload)
    registry = ProviderRegistry(
        asr={"pocketsphinx": asr}, llm={"mock": MockLLM()}, tts={"mock": MockTTS()}
    )
    events: list[tuple[str, str]] = []

    def final(turn: Turn) -> None:
        events.append(("final", turn.text))

    sink = AgentSink(
        transcript=final,
        opt_out=lambda phrase, at: None,
        finish=lambda reason: None,
        interim=lambda text, start: events.append(("interim", text)),
    )
    agent = VoiceAgent(parse_agent_config(raw), registry, sink)
    frames = [SILENCE] * 10
    for text in ("yes", "I would like to know more about the offer"):
        frames += frames_of(await line_audio(text)) + [SILENCE] * 40
    loop = asyncio.get_running_loop()
    due, worst_stall = loop.time(), 0.0
    for frame in frames:  # the media clock's pace: one frame every 20 ms
        agent.on_inbound(frame)
        due += 0.02
        await asyncio.sleep(max(0.0, due - loop.time()))
        worst_stall = max(worst_stall, loop.time() - due)
    deadline = time.monotonic() + 15
    while sum(kind == "final" for kind, _ in events) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await agent.aclose()
    asr.close()
    print(f"events={events} worst clock stall={worst_stall * 1000:.0f} ms")

    finals = [text for kind, text in events if kind == "final"]
    assert len(finals) == 2
    assert finals[0].lower() in ("yes", "yeah")  # as the whole-utterance decoder hears it
    assert "know more" in finals[1].lower()
    # the long utterance (about 3 s) is heard word by word before its final
    second = events[events.index(("final", finals[0])) + 1 :]
    heard_first = second[: second.index(("final", finals[1]))]
    assert heard_first, "no interim hypothesis before the final"
    assert {kind for kind, _ in heard_first} == {"interim"} and all(t for _, t in heard_first)
    assert agent.interims == sum(kind == "interim" for kind, _ in events)
