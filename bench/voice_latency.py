"""Reply latency of the voice agent, stage by stage, and the greeting after the answer.

    .venv/bin/python bench/voice_latency.py [--turns 50] [--eou-ms 600 500]
        [--headline-eou 500] [--old-turns 20] [--baseline-turns 10] [--rounds 5]
        [--ttft-ms 300] [--tokens-per-s 30] [--greetings 20]

The cell's voice agent (agentcall.cell.media.voice) on a simulated line: the callee's
utterance is espeak-ng speech through G.711 A-law, fed frame by frame at the media clock's
pace (20 ms) with the WebRTC VAD; the ASR is the cell's streaming mock (audio streamed as it
is heard, the final result at the end of the turn); the LLM is a local OpenAI-compatible
streaming stub (tests/integration/cell/llm_stub.py: ``--ttft-ms`` to the first token, then
``--tokens-per-s``, over real HTTP with server-sent events); espeak-ng synthesises (the real
TTS provider). Each turn's stages (agentcall.cell.media.stages, the same figures as the
cell's ``cell_voice_stage_seconds{stage}``): end of callee speech → VAD end of turn → ASR
final → LLM first token → TTS first audio → first RTP packet (the first reply frame handed
to the socket). Once that frame is out the callee barges in and the next turn starts.

Runs, in one process and interleaved in ``--rounds`` rounds (each round a share of every
run's turns, so machine load falls on all of them alike): the streamed reply with
preemptive generation (agentcall.cell.media.preempt) at each end-of-utterance wait of
``--eou-ms`` (the cell's CELL_END_OF_UTTERANCE_MS), ``--turns`` turns each; the same
without preemptive generation (CELL_PREEMPTIVE_GENERATION=0) at ``--headline-eou``,
``--old-turns`` turns; the baseline, the same LLM awaited whole (``"stream": false``) then
spoken, ``--baseline-turns`` turns; and ``--greetings`` calls answered, timing the opening
line's first packet from the answer.

Targets: reply p50 < 600 ms and p95 < 1 s at ``--headline-eou`` (a reply can never come
sooner than the end-of-utterance wait plus one frame: at 600 ms it is 620 ms at best);
greeting p50 < 300 ms. Printed: one table of p50/p95 per stage for each run, the ratio
against the baseline and against the run without preemptive generation, CPU per turn
(this process and its espeak-ng children), turns without a reply and why, and PASS/FAIL
per target. Needs espeak-ng (Debian package espeak-ng, which `make bench` installs as root).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
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
from agentcall.cell.media import g711, stages  # noqa: E402
from agentcall.cell.media.hearing import VoiceOptions  # noqa: E402
from agentcall.cell.media.quality import percentile  # noqa: E402
from agentcall.cell.media.rtp import PCM_BYTES_PER_FRAME  # noqa: E402
from agentcall.cell.media.speaker import frames_of  # noqa: E402
from agentcall.cell.media.voice import AgentSink, VoiceAgent  # noqa: E402
from bench.figures import Figure, cpu_seconds, record  # noqa: E402

NAME = "voice_latency"
SILENCE = bytes(PCM_BYTES_PER_FRAME)
CALLEE = "What does the offer include for me?"
OPENING = "Hello, this is Anna calling about your energy contract."
REPLY_P50_MS, REPLY_P95_MS, GREETING_P50_MS = 600, 1000, 300
TURN_TIMEOUT_S = 10


class WholeReply:
    """The same LLM without ``stream``: the agent waits for the whole reply."""

    def __init__(self, llm: OpenAIChatLLM) -> None:
        self.llm = llm

    async def reply(self, messages: Sequence[ChatMessage], config: LLMConfig) -> str:
        return await self.llm.reply(messages, config)


def agent_config(opening: str = "") -> Any:
    raw = copy.deepcopy(FULL_AI)
    raw["llm"].update({"provider_ref": "stub", "max_tokens": 200, "timeout_ms": 20_000})
    raw["tts"].update({"provider_ref": "espeak-ng", "voice": "en-us", "timeout_ms": 20_000})
    raw["asr"]["interim"] = True  # streamed to the recogniser as heard
    raw["conversation"].update(  # no max_turns: every turn of the run gets a reply
        {
            "opening": opening,
            "silence_timeout_ms": 600_000,
            "sentence_max_chars": 200,
            "max_turns": None,
        }
    )
    return parse_agent_config(raw)


def make_agent(
    llm: Any, turns: int, eou_ms: int, opening: str = "", preemptive: bool = True
) -> VoiceAgent:
    registry = ProviderRegistry(
        asr={"mock": MockASR(script=[CALLEE] * turns)},
        llm={"stub": llm},
        tts={"espeak-ng": EspeakTTS()},
    )
    sink = AgentSink(lambda t: None, lambda p, at: None, lambda r: None)
    options = VoiceOptions(end_of_utterance_ms=eou_ms, preemptive=preemptive)
    return VoiceAgent(
        agent_config(opening), registry, sink, options=options, vad=make_vad("webrtc")
    )


class MediaClock:
    """Ticks an agent every 20 ms of wall time, as the cell's media clock does."""

    def __init__(self, agent: VoiceAgent) -> None:
        self.agent = agent
        self.loop = asyncio.get_running_loop()
        self.due = self.loop.time()
        self.max_late_s = 0.0  # the worst lateness of a tick (the event loop starved)

    async def tick(self, frame: bytes) -> None:
        self.max_late_s = max(self.max_late_s, self.loop.time() - self.due)
        self.agent.next_outbound()
        self.agent.on_inbound(frame)
        self.due += 0.02
        await asyncio.sleep(max(0.0, self.due - self.loop.time()))


def why_lost(agent: VoiceAgent, clock: MediaClock) -> str:
    """Why a turn got no reply: the agent ended the conversation (a bug of the run's
    config or of the agent), or the process was starved (the media clock fell behind)."""
    if agent.finished is not None:
        return f"the agent ended the conversation ({agent.finished})"
    late_ms = clock.max_late_s * 1000
    if late_ms > 200:
        return f"starved: the media clock ran up to {late_ms:.0f} ms late"
    return f"the agent did not answer (media clock at most {late_ms:.0f} ms late)"


@dataclass(frozen=True)
class Run:
    """One configuration of the agent the bench measures."""

    name: str
    eou_ms: int
    turns: int
    preemptive: bool = True
    whole: bool = False  # the LLM awaited whole (the baseline)


@dataclass
class Found:
    replies: list[dict[str, int]] = field(default_factory=list)
    cpu_s: float = 0.0
    turns: int = 0
    lost: int = 0
    reasons: set[str] = field(default_factory=set)
    preemptive: dict[str, int] = field(default_factory=dict)


async def run_turns(llm: Any, utterance: list[bytes], run: Run, turns: int, found: Found) -> None:
    """``turns`` turns of ``run`` into ``found``; a turn without a reply within
    ``TURN_TIMEOUT_S`` is counted lost (with the reason, :func:`why_lost`) and the next
    one starts."""
    agent = make_agent(
        WholeReply(llm) if run.whole else llm, 2 * turns, run.eou_ms, "", run.preemptive
    )
    clock = MediaClock(agent)
    began = cpu_seconds()
    for _ in range(turns):
        replied = len(agent.reply_timings)
        for frame in [SILENCE] * 15 + utterance:
            await clock.tick(frame)
        deadline = asyncio.get_running_loop().time() + TURN_TIMEOUT_S
        while len(agent.reply_timings) <= replied:  # until the reply's first frame is out
            if asyncio.get_running_loop().time() > deadline:
                found.lost += 1
                found.reasons.add(why_lost(agent, clock))
                break
            await clock.tick(SILENCE)
        agent.interrupt()  # the callee barges in: the next turn
    await agent.aclose()
    found.cpu_s += cpu_seconds() - began
    found.turns += turns
    found.replies += stages.replies_stage_ms(agent.reply_timings)
    for key, count in agent.preempter.counts().items():
        found.preemptive[key] = found.preemptive.get(key, 0) + count


async def run_greetings(llm: Any, calls: int) -> list[int]:
    """Answer ``calls`` calls; each opening line's first packet after the answer (ms)."""
    found = []
    for _ in range(calls):
        agent = make_agent(llm, 0, 600, OPENING)
        clock = MediaClock(agent)
        agent.start()  # the callee answered now
        deadline = asyncio.get_running_loop().time() + TURN_TIMEOUT_S
        while agent.speaker.greeting is None:
            if asyncio.get_running_loop().time() > deadline:
                raise SystemExit(f"no greeting within {TURN_TIMEOUT_S} s of the answer")
            await clock.tick(SILENCE)
        greeting = stages.greeting_ms(agent.speaker.greeting) or {}
        found.append(greeting["first_packet"])
        await agent.aclose()
    return found


def table(runs: dict[str, list[dict[str, int]]]) -> list[str]:
    """p50/p95 of each stage (ms), one column pair per run."""
    names = list(runs)
    summaries = {name: stages.stage_percentiles(replies) for name, replies in runs.items()}
    head = f"{'stage':<18}" + "".join(f" | {name:>24}" for name in names)
    lines = [head, f"{'':<18}" + "".join(f" | {'p50 ms':>11} {'p95 ms':>12}" for _ in names)]
    for stage in (*stages.STAGES, stages.REPLY):
        cells = []
        for name in names:
            row = summaries[name].get(stage, {})
            cells.append(f" | {_ms(row.get('p50')):>11} {_ms(row.get('p95')):>12}")
        lines.append(f"{stage:<18}" + "".join(cells))
    return lines


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="turns per preemptive run")
    parser.add_argument("--old-turns", type=int, default=20, help="turns without preemption")
    parser.add_argument("--baseline-turns", type=int, default=10, help="whole-reply turns")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--greetings", type=int, default=20, help="answered calls timed")
    parser.add_argument("--ttft-ms", type=int, default=300, help="stub LLM's first token")
    parser.add_argument("--tokens-per-s", type=float, default=30.0)
    parser.add_argument("--eou-ms", type=int, nargs="+", default=[600, 500])
    parser.add_argument("--headline-eou", type=int, default=500, help="the target's eou")
    return parser.parse_args()


def runs_of(args: argparse.Namespace) -> list[Run]:
    """The runs, headline first; the baseline last."""
    eous = [args.headline_eou, *(e for e in args.eou_ms if e != args.headline_eou)]
    head = args.headline_eou
    return [
        *(Run(f"preemptive, eou {eou} ms", eou, args.turns) for eou in eous),
        Run(f"streamed, eou {head} ms", head, args.old_turns, preemptive=False),
        Run(f"whole reply, eou {head} ms", head, args.baseline_turns, False, whole=True),
    ]


async def measure(args: argparse.Namespace, utterance: list[bytes]) -> dict[str, Any]:
    """Every run, interleaved: each of ``--rounds`` rounds runs a share of each one."""
    state = StubState(ttft_s=args.ttft_ms / 1000, tokens_per_s=args.tokens_per_s)
    runs = runs_of(args)
    found = {run.name: Found() for run in runs}
    rounds = max(1, args.rounds)
    with llm_stub(state) as (url, state):
        llm = OpenAIChatLLM(OpenAISettings(url, default_model="stub"))
        for i in range(rounds):
            for run in runs:
                share = run.turns * (i + 1) // rounds - run.turns * i // rounds
                if share:
                    await run_turns(llm, utterance, run, share, found[run.name])
        greetings = await run_greetings(llm, args.greetings)
        await llm.aclose()
    return {"runs": runs, "found": found, "greetings": greetings}


def reply_figure(
    name: str, p50: float, base: tuple[str, float | None], cpu_s: float, met: bool
) -> Figure:
    return Figure(
        NAME,
        f"reply p50, {name}",
        p50,
        "ms",
        higher_is_better=False,
        baseline=base[1],
        baseline_name=base[0],
        cpu_ms_per_unit=round(cpu_s * 1000, 2),
        per="turn",
        target=f"p50 < {REPLY_P50_MS} ms, p95 < {REPLY_P95_MS} ms",
        met=met,
    )


def p50_p95(found: Found) -> tuple[float, float]:
    replies = [r["reply"] for r in found.replies]
    return percentile(replies, 0.5) or 0, percentile(replies, 0.95) or 0


def report_run(run: Run, found: Found, base: tuple[str, float], old: tuple[str, float]) -> bool:
    p50, p95 = p50_p95(found)
    met = p50 < REPLY_P50_MS and p95 < REPLY_P95_MS
    cpu_s = found.cpu_s / max(1, found.turns)
    line = (
        f"{run.name}: reply p50 {p50:.0f} ms, p95 {p95:.0f} ms over {len(found.replies)} of "
        f"{found.turns} turns; whole/this p50 {base[1] / max(p50, 1):.2f}x"
    )
    if run.preemptive and not run.whole:
        line += f", no preemption/this p50 {old[1] / max(p50, 1):.2f}x; {found.preemptive}"
    print(f"{line}; CPU per turn {cpu_s * 1000:.1f} ms")
    if found.lost:
        print(
            f"  {found.lost} turns got no reply within {TURN_TIMEOUT_S} s: "
            + "; ".join(sorted(found.reasons))
        )
    if not run.whole:
        record(reply_figure(run.name, p50, base, cpu_s, met))
    return met


def report(found: dict[str, Any]) -> bool:
    runs, results, greetings = found["runs"], found["found"], found["greetings"]
    print(*table({run.name: results[run.name].replies for run in runs}), sep="\n")
    base = (runs[-1].name, p50_p95(results[runs[-1].name])[0])
    old = (runs[-2].name, p50_p95(results[runs[-2].name])[0])
    headline = runs[0]
    met = {run.name: report_run(run, results[run.name], base, old) for run in runs}
    g50, g95 = percentile(greetings, 0.5) or 0, percentile(greetings, 0.95) or 0
    greeted = g50 < GREETING_P50_MS
    print(
        f"greeting: first packet after the answer p50 {g50:.0f} ms, p95 {g95:.0f} ms "
        f"over {len(greetings)} calls"
    )
    target = f"p50 < {GREETING_P50_MS} ms"
    record(Figure(NAME, "greeting p50", g50, "ms", False, target=target, met=greeted))
    ok = met[headline.name] and not results[headline.name].lost
    print(
        f"target reply p50 < {REPLY_P50_MS} ms, p95 < {REPLY_P95_MS} ms ({headline.name}): "
        f"{verdict(ok)}"
    )
    print(f"target greeting p50 < {GREETING_P50_MS} ms: {verdict(greeted)}")
    return ok and greeted


async def main() -> int:
    args = arguments()
    if shutil.which("espeak-ng") is None:
        print("espeak-ng not found: apt-get install -y espeak-ng (or run `make bench` as root)")
        return 2
    speech = await EspeakTTS().synthesize(
        CALLEE, TTSConfig("espeak-ng", None, "en-us", 1.0, 10_000)
    )
    utterance = frames_of(g711.decode(g711.encode(speech.pcm)))  # what the phone line carries
    started = time.monotonic()
    found = await measure(args, utterance)
    print(
        f"stub LLM: {args.ttft_ms} ms to first token, {args.tokens_per_s:g} tokens/s (streamed "
        f"over HTTP); streaming mock ASR; espeak-ng TTS; WebRTC VAD; "
        f"{time.monotonic() - started:.0f} s"
    )
    report(found)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
