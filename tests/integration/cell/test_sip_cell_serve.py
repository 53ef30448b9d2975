"""``cell serve --mode sip`` places a real SIP call to sipp and reports it like sim mode.

The carrier (sipp) answers and says "yes" (espeak-ng audio over PCMA RTP); the
agent runs pocketsphinx ASR, the mock LLM and espeak-ng TTS (opening line). The
cell's event stream must show ringing, answered, the callee's transcript turn,
ended(answered) and a recording with both voices. Debian: sip-tester, espeak-ng.
"""

from __future__ import annotations

import copy
import hashlib
import shutil
import uuid
import wave
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.cell.agent.config import TTSConfig
from agentcall.cell.agent.providers_espeak import EspeakTTS
from agentcall.cell.client import CellClient, EventType, Plan, Trunk, UploadTarget
from agentcall.cell.media import g711
from tests.integration.cell.helpers import Watch, presign, serve_sip
from tests.support.agent_configs import FULL_AI
from tests.support.services import S3Settings
from tests.support.sipp.peer import SippPeer, require_sipp

pytestmark = [pytest.mark.integration, pytest.mark.s3]


@pytest.fixture
def sip_cell(tmp_path: Path) -> Iterator[str]:
    with serve_sip(tmp_path) as url:
        yield url


def agent() -> dict[str, object]:
    config = copy.deepcopy(FULL_AI)
    config["asr"]["provider_ref"] = "pocketsphinx"
    config["tts"]["provider_ref"] = "espeak-ng"
    config["tts"]["voice"] = "en-us"
    config["conversation"]["opening"] = "Hello, this is a test call."
    config["conversation"]["silence_timeout_ms"] = 20_000
    return config


async def test_sip_mode_answered_call_reports_transcript_and_recording(
    sip_cell: str, tmp_path: Path, s3_client: Any, s3_settings: S3Settings, object_key: str
) -> None:
    """The same events as sim mode, and the recording goes to S3 by presigned PUT (D-REC-1)."""
    require_sipp()
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    tts = TTSConfig("espeak-ng", None, "en-us", 0.8, 10_000)
    speech = await EspeakTTS().synthesize("yes", tts)
    audio = tmp_path / "yes.al"
    audio.write_bytes(g711.encode(bytes(8000) + speech.pcm + bytes(8000)))  # 0.5 s pads
    peer = SippPeer("answer_play_bye.xml", tmp_path, audio=audio, talk_ms=4000)
    await peer.start()
    call_id = f"sip-{uuid.uuid4().hex[:10]}"
    plan = Plan(
        call_id=call_id,
        trunk=Trunk("trunk-sipp", "", "127.0.0.1", peer.port, "udp", "none"),
        caller_id="BD00000000",
        callee="15003164745",
        ring_timeout_ms=5000,
        max_duration_ms=15_000,
        agent=agent(),
        recording_upload=None,
        tags={"task_id": "task-sip"},
    )
    try:
        async with CellClient(sip_cell) as cell:
            watch = await Watch.open(cell)
            await cell.originate(plan)
            events = await watch.settled(call_id)
            await watch.aclose()
            target = UploadTarget(
                "upload-sip-1", presign(s3_client, s3_settings.bucket, object_key)
            )
            upload = await cell.upload_recording(call_id, target)
        sipp = await peer.wait()
    finally:
        await peer.kill()
    assert sipp.returncode == 0, sipp.errors or sipp.stderr
    types = [e.type for e in events]
    assert types[:4] == [
        EventType.DIALING,
        EventType.RINGING,
        EventType.ANSWERED,
        EventType.TRANSCRIPT,
    ], types
    ended = next(e for e in events if e.type == EventType.ENDED)
    assert ended.data["outcome"] == "answered", ended.data
    quality = ended.data["quality"]  # the cell's own figures, kept by the D (not call.result)
    assert quality["vad"] == "webrtc" and quality["rtp"]["packets_received"] > 50
    assert quality["rtp"]["loss_ratio"] == 0.0 and quality["clock"]["ticks"] > 100
    metrics = httpx.get(f"{sip_cell}/metrics", timeout=5).text
    assert "cell_call_rtp_loss_ratio_count 1.0" in metrics
    assert "cell_reply_latency_seconds_count" in metrics
    turns = [e.data for e in events if e.type == EventType.TRANSCRIPT]
    assert any(t["role"] == "agent" and "test call" in t["text"] for t in turns), turns
    user = [t["text"] for t in turns if t["role"] == "user"]
    # pocketsphinx's wide-band model on telephone audio: "yes" comes back as yes/yeah
    assert any(word in text.lower().split() for text in user for word in ("yes", "yeah")), turns
    ready = next(e for e in events if e.type == EventType.RECORDING_READY)
    path = Path(ready.data["path"])
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getframerate()) == (1, 8000)
        pcm = w.readframes(w.getnframes())
    assert 3500 <= len(pcm) // 16 <= 9000  # ms: talk_ms plus signalling
    samples = array("h")
    samples.frombytes(pcm)
    assert max(abs(s) for s in samples) > 2000
    assert (upload.status, upload.error_code) == ("uploaded", None)
    stored = s3_client.get_object(Bucket=s3_settings.bucket, Key=object_key)["Body"].read()
    assert hashlib.sha256(stored).hexdigest() == upload.sha256
    assert stored[44:] == pcm
