"""The cell's quality summary of a call (RTP, clock, reply latency, AMD, DTMF) is kept
with the ended execution, and never reaches the call.result (its schema is unchanged)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from agentcall.dispatcher import contracts
from agentcall.dispatcher.calls.events import ending_from_event
from agentcall.dispatcher.domain.results import CallEnd, call_result, recording_not_created
from agentcall.dispatcher.finalize.result import _end_json, end_from_json

from . import factories as f
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
    ending = ending_from_event(data, (), NOW)
    assert ending.end.quality == QUALITY
    stored = json.loads(json.dumps(_end_json(ending.end)))
    assert stored["quality"] == QUALITY and end_from_json(stored) == ending.end


def test_no_quality_from_a_simulated_cell_or_an_older_row() -> None:
    assert ending_from_event({"outcome": "busy", "quality": "junk"}, (), NOW).end.quality is None
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
