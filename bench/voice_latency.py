"""Reply latency of the voice agent: whole replies (before) against streamed ones (after).

    .venv/bin/python bench/voice_latency.py [--turns 8] [--ttft-ms 300] [--tokens-per-s 30]

A local OpenAI-compatible stub LLM (tests/integration/cell/llm_stub.py) answers every
turn with the same three-sentence reply, ``--ttft-ms`` after the request and then
``--tokens-per-s``; espeak-ng synthesises (the real TTS provider). The callee's
utterance is espeak-ng speech through G.711 A-law, fed to the agent frame by frame at
the media clock's pace (20 ms), with the WebRTC VAD; the ASR is the mock (it answers at
once, so ASR time is not in these figures). A turn's reply latency is from the callee's
last voiced frame to the first frame of the reply handed to the RTP socket (what
``cell_reply_latency_seconds`` observes). Once the first frame is out the agent is
interrupted (barge-in) and the next turn starts.

Modes, each ``--turns`` turns, in one run:

- ``whole``: the LLM's reply is awaited whole (``"stream": false``), then spoken;
- ``streamed``: the reply is streamed (SSE) into sentence-chunked synthesis;
- ``streamed, end of utterance 300 ms``: the same with CELL_END_OF_UTTERANCE_MS=300.

Printed: p50/p95 per mode and the median of each step (ms since the end of speech).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.cell.llm_stub import StubState, llm_stub  # noqa: E402
from tests.support.agent_configs import FULL_AI  # noqa: E402

from agentcall.cell.agent.config import LLMConfig, TTSConfig, parse_agent_config  # noqa: E402
from agentcall.cell.agent.mock import MockASR  # noqa: E402
from agentcall.cell.agent.providers import ChatMessage, ProviderRegistry  # noqa: E402
from agentcall.cell.agent.providers_espeak import EspeakTTS  # noqa: E402
from agentcall.cell.agent.providers_openai import OpenAIChatLLM, OpenAISettings  # noqa: E402
from agentcall.cell.audio.vad import make_vad  # noqa: E402
from agentcall.cell.media import g711  # noqa: E402
from agentcall.cell.media.hearing import VoiceOptions  # noqa: E402
from agentcall.cell.media.quality import percentile  # noqa: E402
from agentcall.cell.media.rtp import PCM_BYTES_PER_FRAME  # noqa: E402
from agentcall.cell.media.speaker import ReplyTiming, frames_of  # noqa: E402
from agentcall.cell.media.voice import AgentSink, VoiceAgent  # noqa: E402

SILENCE = bytes(PCM_BYTES_PER_FRAME)
CALLEE = "What does the offer include for me?"
STEPS = ("end_of_utterance", "llm_first_token", "first_sentence", "tts_first_audio")


class WholeReply:
    """The same LLM without ``stream``: the agent waits for the whole reply."""

    def __init__(self, llm: OpenAIChatLLM) -> None:
        self.llm = llm

    async def reply(self, messages: Sequence[ChatMessage], config: LLMConfig) -> str:
        return await self.llm.reply(messages, config)


def agent_config() -> Any:
    raw = copy.deepcopy(FULL_AI)
    raw["llm"].update({"provider_ref": "stub", "max_tokens": 200, "timeout_ms": 20_000})
    raw["tts"].update({"provider_ref": "espeak-ng", "voice": "en-us", "timeout_ms": 20_000})
    raw["asr"]["interim"] = False
    raw["conversation"].update(
        {"opening": "", "silence_timeout_ms": 600_000, "sentence_max_chars": 200}
    )
    return parse_agent_config(raw)


async def run_mode(llm: Any, utterance: list[bytes], turns: int, eou_ms: int) -> list[ReplyTiming]:
    registry = ProviderRegistry(
        asr={"mock": MockASR(script=[CALLEE] * turns)},
        llm={"stub": llm},
        tts={"espeak-ng": EspeakTTS()},
    )
    sink = AgentSink(lambda t: None, lambda p, at: None, lambda r: None)
    agent = VoiceAgent(
        agent_config(),
        registry,
        sink,
        options=VoiceOptions(end_of_utterance_ms=eou_ms),
        vad=make_vad("webrtc"),
    )
    loop = asyncio.get_running_loop()
    due = loop.time()

    async def tick(frame: bytes) -> None:
        nonlocal due
        agent.next_outbound()
        agent.on_inbound(frame)
        due += 0.02
        await asyncio.sleep(max(0.0, due - loop.time()))

    for turn in range(turns):
        for frame in [SILENCE] * 15 + utterance:
            await tick(frame)
        while len(agent.reply_timings) <= turn:  # until the reply's first frame is out
            await tick(SILENCE)
        agent.interrupt()
    await agent.aclose()
    return agent.reply_timings


def show(name: str, timings: list[ReplyTiming]) -> float:
    replies = [t.reply_ms for t in timings if t.reply_ms is not None]
    p50, p95 = percentile(replies, 0.5), percentile(replies, 0.95)
    steps = {
        step: statistics.median(v for t in timings if (v := t.breakdown()[step]) is not None)
        for step in STEPS
    }
    since_eou = [r - (t.ms(t.utterance_end) or 0) for t, r in zip(timings, replies, strict=True)]
    print(
        f"{name}: turns={len(replies)} reply p50={p50} ms p95={p95} ms "
        f"(from the end-of-utterance decision: p50={percentile(since_eou, 0.5)} ms)"
    )
    print(
        "    median ms since the end of speech: " + ", ".join(f"{k}={v}" for k, v in steps.items())
    )
    return float(p50 or 0)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--ttft-ms", type=int, default=300)
    parser.add_argument("--tokens-per-s", type=float, default=30.0)
    args = parser.parse_args()
    tts = TTSConfig("espeak-ng", None, "en-us", 1.0, 10_000)
    speech = await EspeakTTS().synthesize(CALLEE, tts)
    line = g711.decode(g711.encode(speech.pcm))  # what the callee's phone line carries
    utterance = frames_of(line)
    state = StubState(ttft_s=args.ttft_ms / 1000, tokens_per_s=args.tokens_per_s)
    with llm_stub(state) as (url, state):
        llm = OpenAIChatLLM(OpenAISettings(url, default_model="stub"))
        started = time.monotonic()
        whole = await run_mode(WholeReply(llm), utterance, args.turns, 600)
        streamed = await run_mode(llm, utterance, args.turns, 600)
        short_eou = await run_mode(llm, utterance, args.turns, 300)
        await llm.aclose()
        wall = time.monotonic() - started
    print(
        f"stub LLM: {args.ttft_ms} ms to first token, {args.tokens_per_s:g} tokens/s; "
        f"espeak-ng TTS; {len(state.connections)} HTTP connection(s) for "
        f"{len(state.requests)} requests ({llm.clients_made} client; a streamed reply cut "
        f"by the barge-in that ends each turn cannot give its connection back); {wall:.0f} s"
    )
    before = show("whole reply (before)", whole)
    after = show("streamed (after)", streamed)
    fast = show("streamed, end of utterance 300 ms", short_eou)
    print(f"p50 before/after: {before:.0f} -> {after:.0f} ms ({before / max(after, 1):.2f}x)")
    best = min(after, fast)
    print(f"target p50 < 700 ms: {'PASS' if best < 700 else 'FAIL'} (best {best:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
