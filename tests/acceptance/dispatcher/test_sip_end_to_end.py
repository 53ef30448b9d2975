"""A real SIP call end to end: mocksaas + the D + ``cell serve --mode sip`` + sipp + S3.

The D pins the trunk of the approved SIP snapshot (mode ``real``, server = sipp) in the
call plan; the cell dials sipp, which answers and says "yes" (espeak-ng audio over PCMA
RTP) and hangs up. The SaaS must receive one accepted command.result and one call.result
carrying the callee's transcript and a recording the D verified in S3 (D-RES-1, D-REC-2).
Debian: sip-tester, espeak-ng.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.cell.agent.config import TTSConfig
from agentcall.cell.agent.providers_espeak import EspeakTTS
from agentcall.cell.media import g711
from agentcall.mocksaas.domain.sip import SipOptions, build_sip_snapshot
from agentcall.mocksaas.domain.task_config import AgentMode, default_agent_config
from tests.acceptance.dispatcher.harness import BIN, CELL_ID, MockSaas, Proc, Scenario, s3_env
from tests.support.ports import free_port
from tests.support.services import s3_settings
from tests.support.sipp.peer import SippPeer
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq, pytest.mark.s3]


class SipCell:
    """``cell serve --mode sip`` on a loopback HTTP port; SIP/RTP bind 127.0.0.1."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = workdir / "cell"
        argv = [str(BIN / "cell"), "serve", "--mode", "sip", "--http-port", str(self.port)]
        argv += ["--data-dir", str(self.data), "--log-format", "json", "--cell-id", CELL_ID]
        self.proc = Proc(argv, workdir / "cell.log", {"CELL_SIP_BIND_HOST": "127.0.0.1"})

    def start(self) -> SipCell:
        self.proc.start()
        wait_for(self._healthy, 30, "sip cell /healthz")
        return self

    def carry(self, snapshot: dict[str, Any]) -> None:
        """Load the approved SIP snapshot into the cell (D-NOTE-9)."""
        httpx.put(f"{self.url}/v1/config", json=snapshot, timeout=10).raise_for_status()

    def _healthy(self) -> bool:
        if not self.proc.alive:
            raise RuntimeError(f"sip cell exited:\n{self.proc.text()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False


@pytest.fixture
def tools() -> None:
    missing = [b for b in ("sipp", "espeak-ng") if shutil.which(b) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (Debian packages sip-tester, espeak-ng)")


@pytest.fixture
def sip_scene(tools: None, saas: MockSaas, tmp_path: Path, workdir: Path) -> Iterator[Scenario]:
    cell = SipCell(tmp_path).start()
    s = Scenario(saas, cell, workdir)  # type: ignore[arg-type]  # only .url, .carry are used
    try:
        yield s
    finally:
        if s.proc is not None and s.proc.alive:
            s.stop()
        cell.proc.stop()


def real_snapshot(d: str, port: int) -> dict[str, Any]:
    """The default snapshot, mode ``real``, its one trunk pointing at sipp."""
    snapshot = build_sip_snapshot(d, 1, REAL, datetime.now(UTC))
    detail = snapshot["trunk_details"][0]
    detail.update(server_host="127.0.0.1", server_port=port, transport="udp", auth_mode="none")
    return snapshot


REAL = SipOptions(mode="real", allowed_targets=("15003164745",))  # a whitelist (D-NOTE-6)


def sip_agent() -> dict[str, Any]:
    config = default_agent_config(AgentMode.FULL_AI)
    config["asr"] = {**config["asr"], "provider_ref": "pocketsphinx", "language": "en-US"}
    config["tts"] = {**config["tts"], "provider_ref": "espeak-ng", "voice": "en-us"}
    config["conversation"] = {
        **config["conversation"],
        "opening": "Hello, this is a test call.",
        "silence_timeout_ms": 20_000,
    }
    return config


async def yes_audio(tmp_path: Path) -> Path:
    tts = TTSConfig("espeak-ng", None, "en-us", 0.8, 10_000)
    speech = await EspeakTTS().synthesize("yes", tts)
    audio = tmp_path / "yes.al"
    audio.write_bytes(g711.encode(bytes(8000) + speech.pcm + bytes(8000)))  # 0.5 s pads
    return audio


async def test_real_sip_call_result_has_transcript_and_uploaded_recording_d_res_1_d_rec_2(
    sip_scene: Scenario, s3_client: Any, tmp_path: Path
) -> None:
    s = sip_scene
    peer = SippPeer("answer_play_bye.xml", tmp_path, audio=await yes_audio(tmp_path), talk_ms=4000)
    await peer.start()
    try:
        snapshot = {"snapshot": real_snapshot(s.d, peer.port)}
        s.cell.carry(s.saas.admin("PUT", f"/dispatchers/{s.d}/sip", snapshot))
        s.task("task-sip", ring_timeout_ms=5000, agent_config=sip_agent())
        s.quota()
        prefix = f"it-sip-{uuid.uuid4().hex[:8]}"
        env = s3_env(prefix)
        await asyncio.to_thread(lambda: s.start(True, **env))
        (command_id,) = s.calls("task-sip", callees=["15003164745"])
        (result,) = await asyncio.to_thread(s.wait_results, 1, 30, event_type="call.result")
        sipp = await peer.wait(timeout=10)
    finally:
        await peer.kill()
    assert sipp.returncode == 0, sipp.errors or sipp.stderr
    commands = s.results(event_type="command.result")
    assert [(r["command_id"], r["status"]) for r in commands] == [(command_id, "accepted")]
    assert len(s.results(event_type="call.result")) == 1  # D-RES-1: exactly one per call
    assert result["valid"], result["errors"]
    payload = result["body"]["payload"]
    assert payload["outcome"] == "answered", payload
    user = [t["text"] for t in payload["transcript"] if t["role"] == "user"]
    assert any(text.strip() for text in user), payload["transcript"]  # the callee's "yes"
    rec = payload["recording"]
    assert rec["status"] == "uploaded", rec  # D-REC-2: verified by the D before reporting
    assert rec["bucket"] == s3_settings().bucket and rec["object_key"].startswith(prefix)
    body = s3_client.get_object(Bucket=rec["bucket"], Key=rec["object_key"])["Body"].read()
    assert len(body) == rec["size_bytes"] > 44 and body[:4] == b"RIFF"
    assert hashlib.sha256(body).hexdigest() == rec["checksum_sha256"]
    assert s.summary()["duplicates"] == {}
    assert s3_settings().secret_key not in s.log()
