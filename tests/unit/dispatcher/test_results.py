"""Result bodies validate against the contract schemas (D-CMD-3, D-RES-1, D-RES-2, D-REC-2)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from agentcall.dispatcher import contracts
from agentcall.dispatcher.calls.plan import cell_plan
from agentcall.dispatcher.domain.admission import Accept, decide
from agentcall.dispatcher.domain.occupancy import OccupancyIndex
from agentcall.dispatcher.domain.results import (
    CallEnd,
    TranscriptSegment,
    call_result,
    execute_result,
    recording_not_created,
    recording_unavailable,
    recording_uploaded,
)
from tests.support import dispatcher_factories as f


def plan() -> Accept:
    result = decide(f.command(), f.view(), f.sip(), f.quota(), f.occupancy(), f.NOW)
    assert isinstance(result, Accept)
    return result


def test_accepted_command_result_d_cmd_3() -> None:
    body = execute_result(
        event_id="e1", command=f.command(), occurred_at=f.NOW, execution_id="x1", reason_code=None
    )
    contracts.validate(contracts.Kind.EXECUTE_RESULT, body)
    assert body["payload"]["reason_code"] == "accepted"


@pytest.mark.parametrize("reason", sorted(contracts.execute_reject_reasons()))
def test_rejected_command_result_each_reason_d_cmd_3(reason: str) -> None:
    body = execute_result(
        event_id="e1", command=f.command(), occurred_at=f.NOW, execution_id=None, reason_code=reason
    )
    contracts.validate(contracts.Kind.EXECUTE_RESULT, body)
    assert "execution_id" not in body["payload"]


MEDIA = {
    "format": "wav",
    "channels": 1,
    "sample_rate_hz": 8000,
    "duration_ms": 5000,
    "size_bytes": 80044,
    "checksum_sha256": "a" * 64,
}
RECORDINGS = [
    ("not_created", recording_not_created("no_answer")),
    ("unavailable", recording_unavailable("deadline_exceeded", "rec-1", "up-1", MEDIA)),
    (
        "uploaded",
        recording_uploaded(
            recording_id="rec-1", upload_id="up-1", bucket="b", object_key="k.wav", media=MEDIA
        ),
    ),
]


@pytest.mark.parametrize(("status", "recording"), RECORDINGS, ids=[r[0] for r in RECORDINGS])
def test_call_result_with_each_recording_status_d_res_1(status: str, recording: dict) -> None:  # type: ignore[type-arg]
    end = CallEnd(
        started_at=f.NOW,
        ended_at=f.NOW + timedelta(seconds=30),
        outcome="answered",
        reason_code=None,
        transcript=(TranscriptSegment("t1", "s1", "user", "hello", 100, 900),),
    )
    body = call_result(
        event_id="cr-1",
        dispatcher_id=f.D_ID,
        execution_id="x1",
        call_id="x1",
        plan=plan().plan,
        end=end,
        recording=recording,
        occurred_at=f.NOW,
    )
    contracts.validate(contracts.Kind.CALL_RESULT, body)
    assert body["payload"]["duration_ms"] == 30_000
    assert body["payload"]["recording"]["status"] == status


def test_cell_plan_pins_snapshot_d_cmd_3() -> None:
    pinned = plan().plan
    body = cell_plan("x1", "call-1", pinned)
    assert body.call_id == "call-1"
    assert body.trunk.trunk_id == "trunk-a" and body.trunk.dial_prefix == ""
    assert body.caller_id == "BD00000000"  # raw caller id, never cleaned (D-CFG-1)
    assert body.max_duration_ms == 90_000
    assert body.agent == json.loads(pinned.agent_config_json)
    assert body.tags["command_id"] == "command-1"


def test_occupancy_index_counts_per_tenant_task_trunk_d_cmd_4() -> None:
    counts = [("t1", "a", "k1", 1), ("t1", "b", "k1", 1), ("t2", "c", "k2", 1)]
    index = OccupancyIndex.from_counts(counts)
    view = index.view("t1", "a")
    assert (view.tenant, view.task, view.on_trunk("k1"), view.on_trunk("k2")) == (2, 1, 2, 1)
    index.add("t1", "a", "k2")
    assert index.view("t1", "a").task == 2


def test_occupancy_index_adds_up_grouped_counts_d_cmd_4() -> None:
    """Counts of executions grouped by (tenant, task, trunk) add up per tenant, per task
    and per trunk, a triple given twice included."""
    index = OccupancyIndex.from_counts(
        [("t1", "a", "k1", 3), ("t1", "a", "k2", 2), ("t1", "b", "k1", 4), ("t1", "a", "k1", 1)]
    )
    view = index.view("t1", "a")
    assert (view.tenant, view.task, view.on_trunk("k1"), view.on_trunk("k2")) == (10, 6, 8, 2)
    assert index.view("t1", "b").task == 4 and index.view("t2", "x").tenant == 0
