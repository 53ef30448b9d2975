"""The cell's quality summary of a call (RTP, clock, reply latency, AMD, DTMF) is kept
with the ended execution — from the ``call.ended`` event, and from the cell's call record
when a restarted D reconciles — and never reaches the call.result (its schema is
unchanged)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from agentcall.cell.client import CallInfo
from agentcall.dispatcher import contracts
from agentcall.dispatcher.calls.events import ending_from_event
from agentcall.dispatcher.calls.verdicts import Finish, judge
from agentcall.dispatcher.cell.adapter import event_detail, to_cell_call
from agentcall.dispatcher.cell.port import CallEnded
from agentcall.dispatcher.domain.results import CallEnd, call_result, recording_not_created
from agentcall.dispatcher.domain.states import ExecutionState
from agentcall.dispatcher.finalize.result import _end_json, end_from_json
from agentcall.dispatcher.store.executions import Pending
from tests.support import dispatcher_factories as f

from .test_results import plan

NOW = datetime(2026, 9, 21, 2, 0, tzinfo=UTC)
QUALITY = {
    "rtp": {"packets_lost": 2, "loss_ratio": 0.004, "jitter_ms": 3.1, "late_packets": 0},
    "reply_latency_ms": [640, 710],
    "answering_machine": {"verdict": "machine", "why": "voicemail beep", "action": "hangup"},
    "dtmf": ["9"],
}


def test_quality_of_the_ended_event_is_stored_with_the_execution() -> None:
    data = {"outcome": "answered", "reason_code": "answering_machine", "quality": QUALITY}
    ended = event_detail("call.ended", data)  # read once, by the D's cell adapter
    assert isinstance(ended, CallEnded)
    ending = ending_from_event(ended, (), NOW)
    assert ending.end.quality == QUALITY
    stored = json.loads(json.dumps(_end_json(ending.end)))
    assert stored["quality"] == QUALITY and end_from_json(stored) == ending.end


def test_quality_of_a_call_recovered_after_a_d_restart_is_stored_too() -> None:
    """The D was down when the call ended: reconciliation reads the cell's call record
    (``GET /v1/calls``) and keeps its quality like the ``call.ended`` event's."""
    record = {
        "call_id": "x1",
        "boot_id": "boot-1",
        "state": "ended",
        "callee": "15003164745",
        "dialled": "15003164745",
        "caller_id": "BD00000000",
        "trunk_id": "trunk-a",
        "created_at": (NOW - timedelta(seconds=40)).isoformat(),
        "ended_at": NOW.isoformat(),
        "outcome": "answered",
        "reason_code": "answering_machine",
        "quality": QUALITY,
    }
    call = to_cell_call(CallInfo.from_json(record))  # the D's cell adapter
    pending = Pending("x1", "x1", ExecutionState.UNKNOWN, "boot-1", NOW - timedelta(seconds=45))
    verdict = judge(pending, call, None, "boot-1", NOW, 5.0)
    assert isinstance(verdict, Finish) and verdict.ending.end.quality == QUALITY
    stored = json.loads(json.dumps(_end_json(verdict.ending.end)))
    assert stored["quality"] == QUALITY


def test_no_quality_from_a_simulated_cell_or_an_older_row() -> None:
    ended = event_detail("call.ended", {"outcome": "busy", "quality": "junk"})
    assert isinstance(ended, CallEnded)
    assert ending_from_event(ended, (), NOW).end.quality is None
    older = {"started_at": NOW.isoformat(), "ended_at": NOW.isoformat(), "outcome": "busy"}
    assert end_from_json(older) == CallEnd(NOW, NOW, "busy", None)


def test_call_result_of_an_answering_machine_is_valid_and_carries_no_quality_d_res_1() -> None:
    end = CallEnd(NOW, NOW + timedelta(seconds=4), "answered", "answering_machine", quality=QUALITY)
    body = call_result(
        event_id="cr-1",
        dispatcher_id=f.D_ID,
        execution_id="x1",
        call_id="x1",
        plan=plan().plan,
        end=end,
        recording=recording_not_created("answered"),
        occurred_at=NOW,
    )
    contracts.validate(contracts.Kind.CALL_RESULT, body)
    assert body["payload"]["reason_code"] == "answering_machine"
    assert "quality" not in json.dumps(body)
