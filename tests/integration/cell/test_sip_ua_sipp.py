"""The cell's SIP UA against a real SIP peer: Debian's sipp playing the carrier (UAS).

Needs the Debian packages sip-tester (sipp) and espeak-ng. Each test runs one
sipp process on loopback with a scenario from ``sipp/`` and asserts on sipp's
exit status (every message it expected arrived), on our outcome, and on the
recording.
"""

from __future__ import annotations

import asyncio
import shutil
import wave
from array import array
from pathlib import Path

import pytest

from agentcall.cell.agent.config import TTSConfig
from agentcall.cell.agent.providers_espeak import EspeakTTS
from agentcall.cell.domain.model import Outcome
from agentcall.cell.media import g711
from agentcall.cell.media.session import MediaClock
from agentcall.cell.recording.wav import WavWriter
from agentcall.cell.sip.digest import Credentials
from agentcall.cell.sip.transport import SipEndpoint
from agentcall.cell.sip.ua import CallReport, SipCall, SipCallPlan, SipTimers
from tests.support.sipp.peer import SippPeer, require_sipp

pytestmark = pytest.mark.integration

PHRASE = "hello, this is the carrier speaking"


class Collector:
    """CallAudio that says nothing and keeps what it hears."""

    def __init__(self) -> None:
        self.heard = bytearray()
        self.frames = 0

    def next_outbound(self) -> bytes | None:
        return None

    def on_inbound(self, pcm: bytes | None) -> None:
        if pcm:
            self.heard += pcm
            self.frames += 1


class Events:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def ringing(self) -> None:
        self.seen.append("ringing")

    def answered(self) -> None:
        self.seen.append("answered")


@pytest.fixture(scope="module")
def carrier_audio(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """espeak-ng speech as a raw A-law file for sipp's rtp_stream."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    config = TTSConfig("espeak", None, "en-us", 1.0, 10_000)
    speech = asyncio.run(EspeakTTS().synthesize(PHRASE, config))
    path = tmp_path_factory.mktemp("audio") / "carrier.al"
    path.write_bytes(g711.encode(speech.pcm))
    return path


async def place(
    peer: SippPeer,
    tmp_path: Path,
    *,
    ring_ms: int = 5000,
    max_ms: int = 10_000,
    credentials: Credentials | None = None,
    rtp_timeout_ms: int = 10_000,
) -> tuple[CallReport, Collector, Events]:
    endpoint = SipEndpoint(peer.transport)
    await endpoint.start()
    plan = SipCallPlan(
        call_id=f"it-{tmp_path.name}",
        caller_id="BD00000000",
        callee="15003164745",
        dial_prefix="",
        server_host="127.0.0.1",
        server_port=peer.port,
        ring_timeout_ms=ring_ms,
        max_duration_ms=max_ms,
        credentials=credentials,
        rtp_timeout_ms=rtp_timeout_ms,
    )
    writers: list[WavWriter] = []

    def open_recording() -> WavWriter:
        writers.append(WavWriter(tmp_path / "call.wav"))
        return writers[-1]

    audio, events, clock = Collector(), Events(), MediaClock()
    timers = SipTimers(linger=0.05, transaction=8.0)
    call = SipCall(
        plan, endpoint, clock, audio, events, timers=timers, open_recording=open_recording
    )
    try:
        report = await asyncio.wait_for(call.run(), 20)
    except BaseException:
        await peer.kill()
        raise
    finally:
        await endpoint.close()
        await clock.stop()
        for writer in writers:
            writer.close()
    return report, audio, events


def peak(pcm: bytes) -> int:
    samples = array("h")
    samples.frombytes(pcm)
    return max((abs(s) for s in samples), default=0)


async def test_answered_call_records_carrier_audio_and_handles_remote_bye(
    tmp_path: Path, carrier_audio: Path
) -> None:
    """Carrier answers, plays speech over PCMA RTP, then hangs up mid-call (remote BYE)."""
    require_sipp()
    peer = SippPeer("answer_play_bye.xml", tmp_path, audio=carrier_audio, talk_ms=2500)
    await peer.start()
    report, audio, events = await place(peer, tmp_path)
    result = await peer.wait()
    assert result.returncode == 0, result.errors or result.stderr
    assert (report.end.outcome, report.end.cause) == (Outcome.ANSWERED, "remote_hangup")
    assert events.seen == ["ringing", "answered"]
    assert report.media is not None and report.media.received > 50
    assert report.media.lost == 0 and report.media.late == 0
    assert 2300 <= report.recorded_ms <= 3500
    with wave.open(str(tmp_path / "call.wav")) as w:
        assert (w.getnchannels(), w.getframerate()) == (1, 8000)
        assert peak(w.readframes(w.getnframes())) > 2000  # speech, not silence
    assert peak(bytes(audio.heard)) > 2000


async def test_max_duration_sends_bye(tmp_path: Path, carrier_audio: Path) -> None:
    peer = SippPeer("answer_wait_bye.xml", tmp_path, audio=carrier_audio, wait_ms=10_000)
    await peer.start()
    report, _, _ = await place(peer, tmp_path, max_ms=1200)
    result = await peer.wait()
    assert result.returncode == 0, result.errors or result.stderr
    assert (report.end.outcome, report.end.cause) == (Outcome.ANSWERED, "max_duration")
    assert 1000 <= report.talk_ms <= 2000


async def test_rtp_timeout_ends_the_call(tmp_path: Path) -> None:
    """The carrier stops sending RTP after 0.2 s: the cell hangs up with rtp_timeout."""
    short = tmp_path / "short.al"
    short.write_bytes(g711.encode(bytes(3200)))
    peer = SippPeer("answer_wait_bye.xml", tmp_path, audio=short, wait_ms=10_000)
    await peer.start()
    report, _, _ = await place(peer, tmp_path, rtp_timeout_ms=800)
    result = await peer.wait()
    assert result.returncode == 0, result.errors or result.stderr
    assert (report.end.outcome, report.end.cause) == (Outcome.ANSWERED, "rtp_timeout")
    assert report.talk_ms < 3000


@pytest.mark.parametrize(
    ("scenario", "outcome", "reason", "seen"),
    [
        ("busy.xml", Outcome.BUSY, "sip_486", []),
        ("decline.xml", Outcome.REJECTED, "sip_603", ["ringing"]),
        ("no_answer.xml", Outcome.NO_ANSWER, "ring_timeout", ["ringing"]),
    ],
)
async def test_unanswered_outcomes(
    tmp_path: Path, scenario: str, outcome: Outcome, reason: str, seen: list[str]
) -> None:
    """486 -> busy, 603 -> rejected, ring timeout -> CANCEL/487 -> no_answer; no recording."""
    peer = SippPeer(scenario, tmp_path, wait_ms=10_000)
    await peer.start()
    report, _, events = await place(peer, tmp_path, ring_ms=800)
    result = await peer.wait()
    assert result.returncode == 0, result.errors or result.stderr
    assert (report.end.outcome, report.end.reason_code) == (outcome, reason)
    assert events.seen == seen
    assert report.recorded_ms == 0 and not (tmp_path / "call.wav").exists()


async def test_digest_auth_on_401_then_answer(tmp_path: Path, carrier_audio: Path) -> None:
    """sipp's verifyauth checks our Authorization (MD5, qop=auth) before answering."""
    peer = SippPeer(
        "auth_answer.xml", tmp_path, audio=carrier_audio, user="trunkuser", password="s3cret"
    )
    await peer.start()
    creds = Credentials("trunkuser", "s3cret")
    report, _, _ = await place(peer, tmp_path, max_ms=800, credentials=creds)
    result = await peer.wait()
    assert result.returncode == 0, result.errors or result.stderr
    assert report.end.outcome is Outcome.ANSWERED


async def test_wrong_password_fails_with_the_carriers_status(
    tmp_path: Path, carrier_audio: Path
) -> None:
    """One digest retry only: the carrier's 403 for bad credentials is the outcome."""
    peer = SippPeer(
        "auth_answer.xml", tmp_path, audio=carrier_audio, user="trunkuser", password="s3cret"
    )
    await peer.start()
    report, _, _ = await place(peer, tmp_path, credentials=Credentials("trunkuser", "wrong"))
    await peer.kill()
    assert (report.end.outcome, report.end.reason_code) == (Outcome.FAILED, "sip_403")


async def test_over_tcp(tmp_path: Path, carrier_audio: Path) -> None:
    peer = SippPeer("answer_wait_bye.xml", tmp_path, transport="tcp", audio=carrier_audio)
    await peer.start()
    report, audio, _ = await place(peer, tmp_path, max_ms=1000)
    result = await peer.wait()
    assert result.returncode == 0, result.errors or result.stderr
    assert report.end.outcome is Outcome.ANSWERED and audio.frames > 20
