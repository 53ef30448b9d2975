"""One call to a second, independent SIP stack: Debian's baresip as the callee.

baresip auto-answers, negotiates PCMA, plays a WAV (espeak-ng saying "yes")
through its aufile source and hangs up when the file ends. We check the outcome,
the RTP statistics and that pocketsphinx recognises what we heard.
Debian packages: baresip-core, espeak-ng.
"""

from __future__ import annotations

import asyncio
import shutil
import wave
from pathlib import Path

import pytest

from agentcall.cell.agent.config import TTSConfig
from agentcall.cell.agent.providers_espeak import EspeakTTS
from agentcall.cell.agent.providers_sphinx import PocketsphinxASR
from agentcall.cell.domain.model import Outcome
from agentcall.cell.media.session import MediaClock
from agentcall.cell.sip.transport import SipEndpoint
from agentcall.cell.sip.ua import SipCall, SipCallPlan, SipTimers
from tests.integration.cell.test_sip_ua_sipp import Collector, Events, peak
from tests.support.ports import free_port_pair

pytestmark = pytest.mark.integration

CONFIG = """poll_method epoll
sip_listen 127.0.0.1:{port}
audio_player aufile,{dir}/unused.wav
audio_source aufile,{dir}/callee.wav
audio_alert aufile,{dir}/unused.wav
ausrc_srate 8000
auplay_srate 8000
ausrc_channels 1
auplay_channels 1
module_path /usr/lib/baresip/modules
module g711.so
module aufile.so
module_app account.so
module_app menu.so
"""


async def start_baresip(workdir: Path) -> tuple[asyncio.subprocess.Process | None, int]:
    binary = shutil.which("baresip")
    if binary is None or shutil.which("espeak-ng") is None:
        pytest.skip("baresip (baresip-core) or espeak-ng is not installed")
    speech = await EspeakTTS().synthesize("yes", TTSConfig("espeak-ng", None, "en-us", 0.8, 5000))
    with wave.open(str(workdir / "callee.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(bytes(8000) + speech.pcm + bytes(8000))
    port = free_port_pair()
    (workdir / "config").write_text(CONFIG.format(port=port, dir=workdir))
    account = "<sip:15003164745@127.0.0.1>;regint=0;answermode=auto;audio_codecs=PCMA\n"
    (workdir / "accounts").write_text(account)
    (workdir / "contacts").write_text("")
    proc = await asyncio.create_subprocess_exec(
        binary,
        "-f",
        str(workdir),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    async with asyncio.timeout(10):
        while True:
            line = await proc.stdout.readline()
            if not line:  # EOF: baresip exited (e.g. its port was taken meanwhile)
                await proc.wait()
                return None, port
            if b"baresip is ready" in line:
                return proc, port


async def start_baresip_retrying(workdir: Path) -> tuple[asyncio.subprocess.Process, int]:
    """Start baresip, on a fresh port again if it exited during start-up."""
    for _ in range(3):
        proc, port = await start_baresip(workdir)
        if proc is not None:
            return proc, port
    pytest.fail("baresip exited during start-up three times; see its config in " + str(workdir))


async def test_call_to_baresip(tmp_path: Path) -> None:
    proc, port = await start_baresip_retrying(tmp_path)
    endpoint, clock, audio, events = SipEndpoint("udp"), MediaClock(), Collector(), Events()
    await endpoint.start()
    plan = SipCallPlan(
        call_id=f"baresip-{tmp_path.name}",
        caller_id="BD00000000",
        callee="15003164745",
        dial_prefix="",
        server_host="127.0.0.1",
        server_port=port,
        ring_timeout_ms=5000,
        max_duration_ms=10_000,
    )
    call = SipCall(plan, endpoint, clock, audio, events, timers=SipTimers(linger=0.05))
    try:
        report = await asyncio.wait_for(call.run(), 20)
    finally:
        proc.kill()
        await proc.wait()
        await endpoint.close()
        await clock.stop()
    assert (report.end.outcome, report.end.cause) == (Outcome.ANSWERED, "remote_hangup")
    assert events.seen[-1] == "answered"
    assert report.media is not None and report.media.received > 50
    assert report.media.lost == 0
    heard = bytes(audio.heard)
    assert peak(heard) > 2000
    text = await asyncio.to_thread(PocketsphinxASR(preload=False).decode, heard, 8000)
    assert text.lower() in ("yes", "yeah"), text
