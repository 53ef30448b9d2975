"""N concurrent answered SIP calls from the cell's UA to sipp, with the mock agent.

    .venv/bin/python bench/cell_sip_calls.py [--calls 50] [--talk-ms 8000]
        [--asr mock|pocketsphinx] [--no-interim] [--vad webrtc|energy] [--amd]

sipp (Debian sip-tester) is the carrier: it answers every call, streams speech
(espeak-ng, PCMA RTP) for ``--talk-ms`` and hangs up. The cell side runs every
call in one process, one UDP SIP socket and one shared 20 ms media clock; each
call's agent (mock providers) speaks its opening line. Printed: CPU ms per call
second, memory per call, RTP loss and jitter (RFC 3550), late packets (arrived
after their playout slot) and late clock ticks (sent > 10 ms behind schedule).
The baseline is a single call measured in the same run; the target is < 1 %
late packets at 50 calls on a 2-core machine.

Each call's agent hears with the cell's voice activity detector (``--vad``, WebRTC by
default, as ``cell serve`` runs it), reads in-band DTMF, and with ``--amd`` also runs
answering-machine detection (beep Goertzel and cadence). The media clock's stalls
(more than 60 ms behind) and worst lag are printed too.

``--asr pocketsphinx`` recognises the callee with the real offline ASR (one
decoder per concurrent call, about 90 MB each: use few calls); ``asr.interim``
is true unless ``--no-interim``. The mock ASR hears a fixed sentence per
utterance and streams its word prefixes as interim hypotheses.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.agent_configs import FULL_AI  # noqa: E402
from tests.support.sipp.peer import SippPeer  # noqa: E402

from agentcall.cell.agent.config import TTSConfig, parse_agent_config  # noqa: E402
from agentcall.cell.agent.mock import MockASR, mock_registry  # noqa: E402
from agentcall.cell.agent.optout import OptOutDetector  # noqa: E402
from agentcall.cell.agent.providers import ASRProvider, ProviderRegistry  # noqa: E402
from agentcall.cell.agent.providers_espeak import EspeakTTS  # noqa: E402
from agentcall.cell.agent.providers_sphinx import PocketsphinxASR  # noqa: E402
from agentcall.cell.audio.vad import make_vad  # noqa: E402
from agentcall.cell.domain.model import AmdAction  # noqa: E402
from agentcall.cell.media import g711  # noqa: E402
from agentcall.cell.media.hearing import VoiceOptions  # noqa: E402
from agentcall.cell.media.session import MediaClock  # noqa: E402
from agentcall.cell.media.voice import AgentSink, VoiceAgent  # noqa: E402
from agentcall.cell.sip.transport import SipEndpoint  # noqa: E402
from agentcall.cell.sip.ua import CallReport, SipCall, SipCallPlan, SipTimers  # noqa: E402


class Quiet:
    def ringing(self) -> None: ...

    def answered(self) -> None: ...


def cpu_s() -> float:
    """CPU time of this process and its children: the pocketsphinx decoders (live
    ones from /proc, ended ones from rusage) and sipp once it was waited for."""
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    total, tick = time.process_time() + ended.ru_utime + ended.ru_stime, os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            comm = fields[0].split("(", 1)[1]
            rest = fields[1].split()
        except (OSError, IndexError):
            continue
        if int(rest[1]) == os.getpid() and comm.startswith("python"):
            total += (int(rest[11]) + int(rest[12])) / tick
    return total


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def registry_for(asr_ref: str, calls: int, interim: bool) -> ProviderRegistry:
    mock = mock_registry()
    asr: ASRProvider
    if asr_ref == "pocketsphinx":
        asr = PocketsphinxASR(preload=False, max_decoders=calls)
        pool = asr.stream_pool if interim else asr.pool
        await asyncio.to_thread(pool.preload, calls)  # every decoder before the clock starts
    else:
        asr = MockASR(script=["hello I am the callee and I keep talking"] * 100_000)
    return ProviderRegistry(asr={asr_ref: asr}, llm=mock.llm, tts=mock.tts)


async def run(
    calls: int,
    talk_ms: int,
    audio: Path,
    workdir: Path,
    asr_ref: str,
    interim: bool,
    vad: str = "webrtc",
    amd: bool = False,
) -> dict[str, float]:
    peer = SippPeer("answer_play_bye.xml", workdir, calls=calls, audio=audio, talk_ms=talk_ms)
    await peer.start()
    endpoint, clock = SipEndpoint("udp"), MediaClock()
    await endpoint.start()
    config = copy.deepcopy(FULL_AI)
    config["conversation"]["opening"] = "Hello, this is a benchmark call from the cell."
    config["conversation"]["silence_timeout_ms"] = 600_000
    config["asr"].update({"provider_ref": asr_ref, "interim": interim})
    agent_config = parse_agent_config(config)
    registry = await registry_for(asr_ref, calls, interim)
    rss0, wall0 = rss_kb(), time.monotonic()
    cpu0 = cpu_s()
    tasks, agents = [], []
    for i in range(calls):
        sink = AgentSink(lambda t: None, lambda p, at: None, lambda r: None)
        options = VoiceOptions(amd=AmdAction.LEAVE_MESSAGE if amd else AmdAction.OFF)
        agent = VoiceAgent(agent_config, registry, sink, OptOutDetector(), options, make_vad(vad))
        agents.append(agent)
        plan = SipCallPlan(
            call_id=f"bench-{i}-{time.time_ns()}",
            caller_id="BD00000000",
            callee=f"1500{i:07d}",
            dial_prefix="",
            server_host="127.0.0.1",
            server_port=peer.port,
            ring_timeout_ms=10_000,
            max_duration_ms=talk_ms + 30_000,
        )
        call = SipCall(plan, endpoint, clock, agent, Quiet(), timers=SipTimers(linger=0.1))
        agent.start()
        tasks.append(asyncio.create_task(call.run()))
        await asyncio.sleep(0.01)
    peak = 0
    while not all(t.done() for t in tasks):
        peak = max(peak, rss_kb())
        await asyncio.sleep(0.2)
    reports: list[CallReport] = [t.result() for t in tasks]
    await asyncio.gather(*(agent.aclose() for agent in agents))  # finals of cut utterances
    sphinx = [a for a in registry.asr.values() if isinstance(a, PocketsphinxASR)]
    for _ in range(600):  # decodes the agents stopped waiting for still cost CPU
        if not any(a.pool.busy or a.stream_pool.busy for a in sphinx):
            break
        await asyncio.sleep(0.1)
    cpu, wall = cpu_s() - cpu0, time.monotonic() - wall0
    result = await peer.wait(60)
    for asr in sphinx:
        asr.close()
    await endpoint.close()
    await clock.stop()
    media = [r.media for r in reports if r.media is not None]
    received = sum(m.received for m in media) or 1
    talk_s = sum(r.talk_ms for r in reports) / 1000 or 1
    return {
        "calls": calls,
        "answered": sum(r.answered for r in reports),
        "sipp_rc": result.returncode,
        "wall_s": wall,
        "cpu_ms_per_call_s": cpu * 1000 / talk_s,
        "cpu_pct_of_core": 100 * cpu / wall,
        "rss_kb_per_call": max(0, peak - rss0) / calls,
        "loss_pct": 100 * sum(m.lost for m in media) / max(1, sum(m.expected for m in media)),
        "jitter_ms_mean": sum(m.jitter_ms for m in media) / max(1, len(media)),
        "late_packets_pct": 100 * sum(m.late for m in media) / received,
        "late_ticks_pct": 100 * clock.late_ticks / max(1, clock.ticks),
        "clock_stalls": sum(m.stalls for m in media),
        "max_lag_ms": max((m.max_lag_ms for m in media), default=0.0),
        "user_turns_per_call": sum(a.user_turns for a in agents) / calls,
        "interims_per_call": sum(a.interims for a in agents) / calls,
    }


def show(name: str, figures: dict[str, float]) -> None:
    print(
        f"{name}: "
        + ", ".join(
            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()
        )
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--talk-ms", type=int, default=8000)
    parser.add_argument("--asr", choices=("mock", "pocketsphinx"), default="mock")
    parser.add_argument("--no-interim", action="store_true", help="asr.interim = false")
    parser.add_argument("--vad", choices=("webrtc", "energy"), default="webrtc")
    parser.add_argument("--amd", action="store_true", help="answering-machine detection on")
    args = parser.parse_args()
    interim = not args.no_interim
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        speech = await EspeakTTS().synthesize(
            "Hello, I am the callee. This audio keeps playing during the benchmark. " * 3,
            TTSConfig("espeak-ng", None, "en-us", 1.0, 20_000),
        )
        audio = work / "callee.al"
        audio.write_bytes(g711.encode(speech.pcm))
        (work / "one").mkdir()
        (work / "many").mkdir()
        extra = {"vad": args.vad, "amd": args.amd}
        base = await run(1, args.talk_ms, audio, work / "one", args.asr, interim, **extra)
        load = await run(args.calls, args.talk_ms, audio, work / "many", args.asr, interim, **extra)
    print(f"asr={args.asr} interim={interim} vad={args.vad} amd={args.amd}")
    show("baseline (1 call)", base)
    show(f"load ({args.calls} calls)", load)
    ratio = load["cpu_ms_per_call_s"] / max(base["cpu_ms_per_call_s"], 1e-9)
    print(f"cpu per call ratio load/baseline: {ratio:.2f}")
    verdict = (
        "PASS" if load["late_packets_pct"] < 1.0 and load["answered"] == args.calls else "FAIL"
    )
    print(f"target < 1 % late packets with all calls answered: {verdict}")
    ticks = "PASS" if load["late_ticks_pct"] < 1.0 else "FAIL"
    print(f"target < 1 % late clock ticks: {ticks} ({load['late_ticks_pct']:.2f} %)")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
