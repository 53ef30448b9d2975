"""Each scripted outcome through the real cell process, driven by agentcall.cell.client."""

from __future__ import annotations

import hashlib
import wave
from pathlib import Path

import pytest

from agentcall.cell.client import CellClient, EventType
from tests.support.agent_configs import asr_only

from .helpers import Watch, plan, unique

pytestmark = pytest.mark.integration

D, R, A, T, E, REC = (
    EventType.DIALING,
    EventType.RINGING,
    EventType.ANSWERED,
    EventType.TRANSCRIPT,
    EventType.ENDED,
    EventType.RECORDING_READY,
)


@pytest.mark.parametrize(
    ("prefix", "outcome", "reason", "cause", "types"),
    [
        ("busy", "busy", "busy", "callee", [D, E]),
        ("noans", "no_answer", "ring_timeout", "limit", [D, R, E]),
        ("reject", "rejected", "rejected", "callee", [D, R, E]),
        ("fail", "failed", "sip_503", "network", [D, E]),
    ],
)
async def test_unanswered_outcomes_have_no_recording_d_res_2(
    cell: CellClient, prefix: str, outcome: str, reason: str, cause: str, types: list[EventType]
) -> None:
    """D-RES-2: no-answer/busy/rejected/failed end without a recording (not_created)."""
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique(prefix)))
    events = await watch.settled(call.call_id)
    await watch.aclose()
    assert [e.type for e in events] == types
    ended = events[-1].data
    assert (ended["outcome"], ended["reason_code"], ended["cause"]) == (outcome, reason, cause)
    assert ended["recording_expected"] is False and ended["talk_ms"] == 0
    info = await cell.get_call(call.call_id)
    assert info.ended and info.outcome == outcome and info.recording is None
    assert info.dialled == "9" + info.callee and info.caller_id == "BD00000000"


async def test_answered_call_has_transcript_and_real_wav_recording(cell: CellClient) -> None:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("answer")))
    events = await watch.settled(call.call_id)
    await watch.aclose()
    types = [e.type for e in events]
    assert types[:3] == [D, R, A] and types[-2:] == [E, REC]
    turns = [e.turn() for e in events if e.type == T]
    assert [t.role for t in turns] == ["agent", "user", "agent", "user", "agent"]
    assert turns[1].text == "Hello?" and turns[2].text == "Thank you. You said: Hello?"
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    ended = events[-2].data
    assert ended["outcome"] == "answered" and ended["reason_code"] is None
    assert ended["ring_ms"] == 1000 and ended["talk_ms"] > turns[-1].end_ms
    recording = events[-1].recording()
    path = Path(recording.path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == recording.sha256
    with wave.open(str(path), "rb") as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (8000, 1, 2)
        assert w.getnframes() * 1000 // 8000 == recording.duration_ms == ended["talk_ms"]
        assert max(w.readframes(8000)) > 0  # not silent
    info = await cell.get_call(call.call_id)
    assert [t.text for t in info.transcript] == [t.text for t in turns]
    assert info.recording == recording


async def test_asr_only_transcribes_the_callee_only(cell: CellClient) -> None:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("answer"), agent_config=asr_only()))
    events = await watch.settled(call.call_id)
    await watch.aclose()
    turns = [e.turn() for e in events if e.type == T]
    assert [(t.role, t.text) for t in turns] == [("user", "Hello?"), ("user", "Tell me more.")]


async def test_opt_out_is_reported_and_ends_the_call(cell: CellClient) -> None:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("optout")))
    events = await watch.settled(call.call_id)
    await watch.aclose()
    opt_out = [e for e in events if e.type == EventType.OPT_OUT]
    assert len(opt_out) == 1 and opt_out[0].data["phrase"] == "stop calling"
    ended = next(e for e in events if e.type == E).data
    assert ended["opt_out"] is True and ended["reason_code"] == "opt_out"
    assert (await cell.get_call(call.call_id)).opt_out


async def test_script_can_switch_the_recording_off(cell: CellClient) -> None:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("norec")))
    events = await watch.settled(call.call_id)
    await watch.aclose()
    assert events[-1].type == E and events[-1].data["outcome"] == "answered"
    assert events[-1].data["recording_expected"] is False
