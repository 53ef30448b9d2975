"""A call's answering-machine handling comes from its plan, through the real boundary: the
Dispatcher's cell adapter sends the originate request with ``amd`` (DISPATCHER_AMD pinned at
admission), ``cell serve --mode sip`` (started with ``CELL_AMD=leave_message``, its default
for plans that do not say) reads it, and the voice agent hangs up on sipp's answering
machine (an espeak-ng greeting of about 6 s, then a 1 kHz beep) instead of leaving the
opening line. Debian: sip-tester, espeak-ng."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path

import pytest

from agentcall.cell.client import CellClient, EventType
from agentcall.dispatcher.cell.adapter import CellAdapter
from agentcall.dispatcher.cell.port import CellPlan, CellTrunk
from tests.integration.cell.helpers import Watch, serve_sip
from tests.integration.cell.test_sip_voice_agent import GREETING, alaw_file, silence, speech
from tests.support.agent_configs import FULL_AI
from tests.support.audio_signals import sines
from tests.support.sipp.peer import SippPeer, require_sipp

pytestmark = pytest.mark.integration


async def test_the_plans_amd_wins_over_the_cells_default(tmp_path: Path) -> None:
    require_sipp()
    greeting = await speech(GREETING)
    beep = sines(1000, ms=500, amplitude=8000)
    audio = alaw_file(
        tmp_path / "machine.al", silence(300), greeting, silence(300), beep, silence(6000)
    )
    peer = SippPeer("answer_wait_bye.xml", tmp_path, audio=audio, wait_ms=25_000)
    await peer.start()
    agent = copy.deepcopy(FULL_AI)
    agent["conversation"]["silence_timeout_ms"] = 20_000
    call_id = f"amd-{uuid.uuid4().hex[:10]}"
    body = CellPlan(  # what the D's calls.plan.cell_plan makes of an execution pinned so
        call_id=call_id,
        trunk=CellTrunk(
            trunk_id="trunk-sipp",
            dial_prefix="",
            server_host="127.0.0.1",
            server_port=peer.port,
            transport="udp",
            auth_mode="none",
        ),
        caller_id="BD00000000",
        callee="15003164745",
        ring_timeout_ms=5000,
        max_duration_ms=30_000,
        agent=agent,
        tags={"task_id": "task-amd"},
        amd="hangup",
    )
    try:
        with serve_sip(tmp_path, {"CELL_AMD": "leave_message"}) as url:
            async with CellClient(url) as cell:
                watch = await Watch.open(cell)
                adapter = CellAdapter(url)
                await adapter.originate(body)
                events = await watch.until(call_id, EventType.ENDED, timeout_s=40)
                await watch.aclose()
                await adapter.aclose()
        sipp = await peer.wait()
    finally:
        await peer.kill()
    assert sipp.returncode == 0, sipp.errors or sipp.stderr
    ended = events[-1].data
    assert (ended["outcome"], ended["reason_code"]) == ("answered", "answering_machine"), ended
    machine = ended["quality"]["answering_machine"]
    assert (machine["verdict"], machine["action"]) == ("machine", "hangup")
    said = [e for e in events if e.type == EventType.TRANSCRIPT and e.data["role"] == "agent"]
    assert said == [], "hung up at once: no opening line left after the beep"
    assert ended["talk_ms"] < 4500, ended
