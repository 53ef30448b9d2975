"""The simulated driver against a recording CallControl (the cell's driver port)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentcall.cell.agent.conversation import ConversationPlan, EndReason
from agentcall.cell.agent.mock import mock_registry
from agentcall.cell.calls.plan import CallPlan, parse_plan
from agentcall.cell.calls.record import Ending
from agentcall.cell.domain.model import EndCause, Outcome, ReasonCode, Turn
from agentcall.cell.recording.wav import WavWriter
from agentcall.cell.sim.driver import AUDIO_STEP_MS, SimDriver, steps
from agentcall.cell.sim.script import parse_script
from tests.support.agent_configs import full_ai

from .plans import plan_body

SCRIPT = parse_script(
    {
        "rules": [
            {
                "match": "talk",
                "outcome": "answered",
                "ring_ms": 100,
                "turns": ["Hello?", "Please stop calling me", "ignored"],
            },
            {"match": "long", "outcome": "answered", "talk_ms": 3_600_000, "turns": ["Hi"]},
            {"match": "busy", "outcome": "busy"},
        ]
    }
)


class Recorder:
    """CallControl that records what the driver reports."""

    def __init__(self, plan: CallPlan, wav: Path) -> None:
        self._plan = plan
        self._hangup = asyncio.Event()
        self.reason = ReasonCode.HANGUP_REQUESTED
        self.log: list[tuple[str, Any]] = []
        self.wav = wav
        self.writer: WavWriter | None = None

    @property
    def plan(self) -> CallPlan:
        return self._plan

    @property
    def hangup_requested(self) -> asyncio.Event:
        return self._hangup

    @property
    def hangup_reason(self) -> ReasonCode:
        return self.reason

    def ringing(self) -> None:
        self.log.append(("ringing", None))

    def answered(self) -> None:
        self.log.append(("answered", None))

    def transcript(self, turn: Turn) -> None:
        self.log.append(("turn", turn))

    def opt_out(self, phrase: str | None, at_ms: int) -> None:
        self.log.append(("opt_out", phrase))

    def ended(self, ending: Ending) -> None:
        self.log.append(("ended", ending))

    def open_recording(self) -> WavWriter:
        self.writer = WavWriter(self.wav)
        return self.writer

    @property
    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.log]


def _recorder(callee: str, tmp_path: Path, **conversation: Any) -> Recorder:
    plan = parse_plan(plan_body(callee=callee, agent=full_ai(**conversation)))
    return Recorder(plan, tmp_path / "c.wav")


DRIVER = SimDriver(SCRIPT, mock_registry(), time_scale=0.0001)


async def test_answered_call_reports_in_order_and_records_talk_time(tmp_path: Path) -> None:
    call = _recorder("talk", tmp_path)
    await DRIVER.run(call)
    assert call.kinds == [
        "ringing",
        "answered",
        "turn",
        "turn",
        "turn",
        "turn",
        "opt_out",
        "turn",
        "ended",
    ]
    ending = call.log[-1][1]
    assert (ending.outcome, ending.reason_code, ending.cause) == (
        Outcome.ANSWERED,
        "opt_out",
        EndCause.AGENT,
    )
    assert ending.ring_ms == 100
    assert call.writer is not None and call.writer.close().duration_ms == ending.talk_ms


async def test_hangup_request_cuts_the_call_where_it_stands(tmp_path: Path) -> None:
    call = _recorder("long", tmp_path, silence_timeout_ms=None)
    driver = SimDriver(SCRIPT, mock_registry(), time_scale=0.001)
    task = asyncio.create_task(driver.run(call))
    while "answered" not in call.kinds:
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.02)
    call.hangup_requested.set()
    await asyncio.wait_for(task, 5)
    ending = call.log[-1][1]
    assert (ending.reason_code, ending.cause) == ("hangup_requested", EndCause.DISPATCHER)
    assert 0 < ending.talk_ms < 3_600_000
    assert call.writer is not None and call.writer.close().duration_ms == ending.talk_ms


async def test_shutdown_ends_with_cell_cause(tmp_path: Path) -> None:
    call = _recorder("long", tmp_path, silence_timeout_ms=None)
    call.reason = ReasonCode.CELL_SHUTDOWN
    call.hangup_requested.set()
    await DRIVER.run(call)
    ending = call.log[-1][1]
    assert (ending.outcome, ending.reason_code, ending.cause) == (
        Outcome.NO_ANSWER,
        "cell_shutdown",
        EndCause.CELL,
    )


async def test_busy_callee_ends_without_ringing_or_recording(tmp_path: Path) -> None:
    call = _recorder("busy", tmp_path)
    await DRIVER.run(call)
    assert call.kinds == ["ended"] and call.writer is None


@pytest.mark.parametrize("end_ms", [1, AUDIO_STEP_MS, 5 * AUDIO_STEP_MS + 7])
async def test_playback_steps_cover_the_call_and_write_audio_regularly(end_ms: int) -> None:
    moments = steps(ConversationPlan((), (), end_ms, EndReason.CALLEE_HANGUP))
    assert moments[-1] == end_ms and moments == sorted(set(moments))
    gaps = [b - a for a, b in zip([0, *moments], moments, strict=False)]
    assert max(gaps) <= AUDIO_STEP_MS
