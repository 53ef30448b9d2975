"""The voice agent on real SIP calls to Debian's sipp (the carrier) on loopback: an
answering machine (espeak-ng greeting of about 6 s, then a 1 kHz beep) is hung up on
or gets the opening line after the beep, per the call plan's ``amd`` (over the cell's
CELL_AMD default); a person
("hello?" then silence) is not flagged; RFC 4733 digit 9 (sipp replays a PCAP of
telephone-events) opts the callee out; in-band DTMF tones are heard; a callee who
talks over the agent stops it within 300 ms, measured on the RTP the cell sends.

The calls run through :class:`~agentcall.cell.sip.driver.SipDriver` (what ``cell serve
--mode sip`` runs) with the mock LLM and TTS and the WebRTC VAD; audio the carrier
plays is generated here (espeak-ng speech, numpy sines) into raw A-law files.
"""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentcall.cell.agent.config import TTSConfig
from agentcall.cell.agent.mock import mock_registry
from agentcall.cell.agent.providers_espeak import EspeakTTS
from agentcall.cell.calls.plan import CallPlan, parse_plan
from agentcall.cell.calls.record import Ending
from agentcall.cell.domain.model import AmdAction, ReasonCode, Role, Turn
from agentcall.cell.media import g711
from agentcall.cell.media.hearing import VoiceOptions
from agentcall.cell.media.rtp import RtpPacket, parse_rtp, serialize_rtp
from agentcall.cell.recording.wav import WavWriter
from agentcall.cell.sip.driver import SipDriver
from agentcall.cell.sip.ua import SipTimers
from tests.support.agent_configs import FULL_AI
from tests.support.audio_signals import sines
from tests.support.sipp.peer import SippPeer, require_sipp

pytestmark = pytest.mark.integration

GREETING = (
    "Hello, you have reached John Smith. I cannot take your call right now. "
    "Please leave a message after the tone."
)
DTMF_PCAP = Path("/usr/share/sip-tester/dtmf_2833_9.pcap")
SILENT_FRAME = bytes([g711.SILENCE_BYTE]) * 160


@dataclass
class Control:
    """The CallControl the cell hands a driver, keeping what the driver reports."""

    plan: CallPlan
    hangup_requested: asyncio.Event = field(default_factory=asyncio.Event)
    turns: list[Turn] = field(default_factory=list)
    opt_outs: list[tuple[str | None, int]] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    ending: Ending | None = None
    hangup_reason: ReasonCode = ReasonCode.HANGUP_REQUESTED
    path: Path | None = None
    writers: list[WavWriter] = field(default_factory=list)

    def ringing(self) -> None:
        self.seen.append("ringing")

    def answered(self) -> None:
        self.seen.append("answered")

    def transcript(self, turn: Turn) -> None:
        self.turns.append(turn)

    def opt_out(self, phrase: str | None, at_ms: int) -> None:
        self.opt_outs.append((phrase, at_ms))

    def ended(self, ending: Ending) -> None:
        self.ending = ending

    def open_recording(self) -> WavWriter:
        assert self.path is not None
        self.writers.append(WavWriter(self.path))
        return self.writers[-1]

    def texts(self, role: Role) -> list[str]:
        return [t.text for t in self.turns if t.role is role]


def plan_for(port: int, amd: AmdAction | None = None, **conversation: Any) -> CallPlan:
    agent = copy.deepcopy(FULL_AI)
    agent["conversation"].update(conversation)
    chosen = {} if amd is None else {"amd": amd.value}
    return parse_plan(
        chosen
        | {
            "call_id": f"voice-{time.time_ns()}",
            "trunk": {
                "trunk_id": "trunk-sipp",
                "dial_prefix": "",
                "server_host": "127.0.0.1",
                "server_port": port,
                "transport": "udp",
                "auth_mode": "none",
            },
            "caller_id": "BD00000000",
            "callee": "15003164745",
            "ring_timeout_ms": 5000,
            "max_duration_ms": 30_000,
            "agent": agent,
        }
    )


async def call(
    peer: SippPeer,
    tmp_path: Path,
    voice: VoiceOptions,
    amd: AmdAction | None = None,
    **conversation: Any,
) -> Control:
    driver = SipDriver(
        mock_registry(), {}, voice=voice, timers=SipTimers(linger=0.05, transaction=8.0)
    )
    control = Control(plan_for(peer.port, amd, **conversation), path=tmp_path / "call.wav")
    try:
        await asyncio.wait_for(driver.run(control), 40)
        result = await peer.wait()
    finally:
        await peer.kill()
        await driver.aclose()
        for writer in control.writers:
            writer.close()
    assert result.returncode == 0, result.errors or result.stderr
    return control


async def speech(text: str, speed: float = 1.0) -> np.ndarray[Any, Any]:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    out = await EspeakTTS().synthesize(text, TTSConfig("espeak-ng", None, "en-us", speed, 10_000))
    return np.frombuffer(out.pcm, dtype="<i2")


def alaw_file(path: Path, *parts: np.ndarray[Any, Any] | bytes) -> Path:
    pcm = b"".join(p if isinstance(p, bytes) else p.astype("<i2").tobytes() for p in parts)
    path.write_bytes(g711.encode(pcm))
    return path


def silence(ms: int) -> bytes:
    return bytes(16 * ms)


@pytest.fixture
async def machine_audio(tmp_path: Path) -> tuple[Path, int]:
    """(A-law file, ms at which the beep ends): greeting, 300 ms pause, 500 ms beep."""
    greeting = await speech(GREETING)
    beep = sines(1000, ms=500, amplitude=8000)
    audio = alaw_file(
        tmp_path / "machine.al", silence(300), greeting, silence(300), beep, silence(6000)
    )
    return audio, 300 + len(greeting) // 8 + 300 + 500


@pytest.mark.parametrize(
    ("default", "action"),
    [(AmdAction.OFF, AmdAction.HANGUP), (AmdAction.HANGUP, AmdAction.LEAVE_MESSAGE)],
)
async def test_answering_machine_is_detected_and_handled_per_call(
    tmp_path: Path, machine_audio: tuple[Path, int], default: AmdAction, action: AmdAction
) -> None:
    """The plan's ``amd`` decides, whatever the cell's default (CELL_AMD)."""
    require_sipp()
    audio, beep_end_ms = machine_audio
    assert 5000 <= beep_end_ms <= 9000  # a greeting of about 6 s
    peer = SippPeer("answer_wait_bye.xml", tmp_path, audio=audio, wait_ms=25_000)
    await peer.start()
    voice = VoiceOptions(amd=default)
    control = await call(peer, tmp_path, voice, action, silence_timeout_ms=20_000)
    assert control.ending is not None
    ending = control.ending
    assert (ending.outcome.value, ending.reason_code, ending.cause.value) == (
        "answered",
        "answering_machine",
        "agent",
    )
    assert ending.quality is not None
    amd = ending.quality["answering_machine"]
    assert (amd["verdict"], amd["action"]) == ("machine", action.value)
    agent_turns = [t for t in control.turns if t.role is Role.AGENT]
    if action is AmdAction.HANGUP:
        assert agent_turns == [] and ending.talk_ms < 4500, ending
    else:
        [opening] = agent_turns
        assert opening.text == FULL_AI["conversation"]["opening"]
        assert opening.start_ms >= beep_end_ms - 100, (opening, beep_end_ms)


async def test_a_person_saying_hello_is_not_flagged(tmp_path: Path) -> None:
    require_sipp()
    hello = await speech("hello?")
    audio = alaw_file(tmp_path / "hello.al", silence(500), hello, silence(8000))
    peer = SippPeer("answer_wait_bye.xml", tmp_path, audio=audio, wait_ms=25_000)
    await peer.start()
    voice = VoiceOptions(amd=AmdAction.HANGUP)
    control = await call(peer, tmp_path, voice, silence_timeout_ms=2500)
    assert control.ending is not None and control.ending.quality is not None
    assert control.ending.reason_code == "silence_timeout"
    assert control.ending.quality["answering_machine"]["verdict"] == "human"
    assert control.texts(Role.AGENT) == [FULL_AI["conversation"]["opening"]]


def pcap_rtp(path: Path) -> list[bytes]:
    """The RTP packets (UDP payloads over Ethernet/IPv4) of a classic PCAP file."""
    data, offset, packets = path.read_bytes(), 24, []
    while offset + 16 <= len(data):
        length = struct.unpack_from("<I", data, offset + 8)[0]
        frame = data[offset + 16 : offset + 16 + length]
        packets.append(frame[14 + 4 * (frame[14] & 0x0F) + 8 :])
        offset += 16 + length
    return packets


async def test_rfc4733_digit_9_opts_the_callee_out(tmp_path: Path) -> None:
    """sipp replays its PCAP of RFC 4733 digit 9 (its pcap play needs raw sockets: as
    another user the test's own carrier socket sends the same packets)."""
    require_sipp()
    if not DTMF_PCAP.exists():
        pytest.skip(f"{DTMF_PCAP} is not installed (Debian sip-tester)")
    media: CarrierMedia | None = None
    if os.geteuid() == 0:
        peer = SippPeer("answer_pcap_wait_bye.xml", tmp_path, pcap=DTMF_PCAP, talk_ms=1500)
    else:
        loop = asyncio.get_running_loop()
        transport, media = await loop.create_datagram_endpoint(
            CarrierMedia, local_addr=("127.0.0.1", 0)
        )
        port = transport.get_extra_info("sockname")[1]
        peer = SippPeer("answer_media_wait_bye.xml", tmp_path, media_port=port)
    await peer.start()

    async def replay() -> None:
        assert media is not None
        while media.cell is None:
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.5)
        for packet in pcap_rtp(DTMF_PCAP):
            assert media.transport is not None
            media.transport.sendto(packet, media.cell)
            await asyncio.sleep(0.02)

    sender = asyncio.create_task(replay()) if media is not None else None
    voice = VoiceOptions(opt_out_digits=frozenset("9"))
    try:
        control = await call(peer, tmp_path, voice, silence_timeout_ms=20_000)
    finally:
        if sender is not None:
            sender.cancel()
        if media is not None and media.transport is not None:
            media.transport.close()
    assert control.ending is not None and control.ending.quality is not None
    assert control.ending.reason_code == "opt_out"
    assert control.opt_outs and control.opt_outs[0][0] == "dtmf 9"
    assert control.texts(Role.USER).count("DTMF 9") == 1  # one press, however many packets
    assert control.ending.quality["dtmf"] == ["9"]
    assert control.ending.quality["rtp"]["telephone_events"] == 1


async def test_inband_dtmf_tones_are_heard(tmp_path: Path) -> None:
    require_sipp()
    keys = [sines(770, 1209, ms=120), silence(100), sines(697, 1336, ms=120)]  # 4, 2
    audio = alaw_file(tmp_path / "keys.al", silence(1000), *keys, silence(4000))
    peer = SippPeer("answer_wait_bye.xml", tmp_path, audio=audio, wait_ms=25_000)
    await peer.start()
    control = await call(peer, tmp_path, VoiceOptions(), silence_timeout_ms=3000)
    assert control.ending is not None and control.ending.quality is not None
    assert [t for t in control.texts(Role.USER) if t.startswith("DTMF")] == ["DTMF 4", "DTMF 2"]
    assert control.ending.quality["dtmf"] == ["4", "2"]


class CarrierMedia(asyncio.DatagramProtocol):
    """The carrier's RTP endpoint: records when the cell's speech stops, sends the callee."""

    def __init__(self) -> None:
        self.cell: tuple[str, int] | None = None
        self.first_speech: float | None = None
        self.received: list[tuple[float, bool]] = []  # (arrival, the cell was silent)
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        now = time.monotonic()
        self.cell = self.cell or addr
        silent = parse_rtp(data).payload == SILENT_FRAME
        self.received.append((now, silent))
        if not silent and self.first_speech is None:
            self.first_speech = now

    def silent_since(self, t0: float) -> float | None:
        return next((t for t, silent in self.received if t >= t0 and silent), None)


async def send_callee(media: CarrierMedia, frames: list[bytes], talk: Callable[[], bool]) -> float:
    """Send the callee's RTP every 20 ms: silence until ``talk()``, then ``frames``;
    returns when the first frame with voice energy was sent."""
    assert media.transport is not None and media.cell is not None
    seq, ts, due, started = 1, 0, time.monotonic(), None
    voice = iter(frames)
    t_voice: float | None = None
    while True:
        payload = SILENT_FRAME
        if started or talk():
            started = True
            frame = next(voice, None)
            if frame is None:
                break
            payload = g711.encode(frame)
            rms = float(np.sqrt(np.mean(np.frombuffer(frame, "<i2").astype(float) ** 2)))
            if t_voice is None and rms > 1000:
                t_voice = time.monotonic()
        packet = RtpPacket(8, seq & 0xFFFF, ts, 0x1234, payload)
        media.transport.sendto(serialize_rtp(packet), media.cell)
        seq, ts, due = seq + 1, ts + 160, due + 0.02
        await asyncio.sleep(max(0.0, due - time.monotonic()))
    assert t_voice is not None
    return t_voice


async def test_callee_talking_over_the_agent_stops_it_within_300_ms(tmp_path: Path) -> None:
    require_sipp()
    words = await speech("wait, wait, I have a question")
    pcm = words.astype("<i2").tobytes() + silence(1000)
    frames = [pcm[i : i + 320] for i in range(0, len(pcm) - 319, 320)]
    loop = asyncio.get_running_loop()
    transport, media = await loop.create_datagram_endpoint(
        CarrierMedia, local_addr=("127.0.0.1", 0)
    )
    port = transport.get_extra_info("sockname")[1]
    peer = SippPeer("answer_media_wait_bye.xml", tmp_path, media_port=port, wait_ms=25_000)
    await peer.start()
    opening = "This is a long opening line that goes on and on so that the callee can cut in."

    async def callee() -> float:
        while media.first_speech is None:  # the opening line has started
            await asyncio.sleep(0.005)
        talk_at = media.first_speech + 1.0  # one second into it, the callee talks
        return await send_callee(media, frames, lambda: time.monotonic() >= talk_at)

    sender = asyncio.create_task(callee())
    try:
        control = await call(
            peer, tmp_path, VoiceOptions(), opening=opening, silence_timeout_ms=2500
        )
        t_voice = await sender
    finally:
        sender.cancel()
        transport.close()
    stopped = media.silent_since(t_voice)
    assert stopped is not None
    cut_ms = (stopped - t_voice) * 1000
    print(f"the agent stopped {cut_ms:.0f} ms after the callee's voice")
    assert cut_ms <= 300
    [turn] = [t for t in control.turns if t.role is Role.AGENT]
    assert turn.text == opening
