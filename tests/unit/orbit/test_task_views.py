"""O-API-3 / O-LST-1: the wire views of a task."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import cancelled, new_task, summarize, summary_view, task_view

pytestmark = pytest.mark.unit

NOW = datetime(2026, 9, 17, tzinfo=UTC)
BODY = (
    '{"queue_id":"11111111111111111111111111111111","handler":"file.convert",'
    '"handler_version":"v1","payload_version":"v1",'
    '"payload":{"source_ref":"objects/input.txt","format":"pdf","sequence":9007199254740993},'
    '"business_key":"conversion-001"}'
)


def make() -> object:
    request = parse_submit(read_json_text(BODY))
    return new_task("2" * 32, "3" * 32, request, plan_times(request, NOW), NOW)


def test_o_api_3_task_view_matches_the_spec_example() -> None:
    """The first-acceptance example of tasks-api-v1.md, byte for byte."""
    expected = (
        '{"id":"22222222222222222222222222222222","namespace_id":"33333333333333333333333333333333",'
        '"queue_id":"11111111111111111111111111111111","state":"WAITING","revision":"1",'
        '"handler":"file.convert","handler_version":"v1","payload_version":"v1",'
        '"payload":{"source_ref":"objects/input.txt","format":"pdf","sequence":9007199254740993},'
        '"business_key":"conversion-001","available_at":"2026-09-17T00:00:00Z",'
        '"deadline_at":"2026-09-18T00:00:00Z","recovery_safety":"RECONCILE_ONLY",'
        '"retry":{"max_attempts":1,"initial_delay_ms":0,"max_delay_ms":0,"attempt_timeout_ms":30000},'
        '"attempt_count":0,"created_at":"2026-09-17T00:00:00Z","updated_at":"2026-09-17T00:00:00Z"}'
    )
    assert dumps(task_view(make())) == expected  # type: ignore[arg-type]


def test_o_lst_1_summary_omits_large_fields() -> None:
    summary = summary_view(summarize(make()))  # type: ignore[arg-type]
    assert list(summary) == [
        "id",
        "queue_id",
        "state",
        "revision",
        "handler",
        "handler_version",
        "business_key",
        "available_at",
        "deadline_at",
        "attempt_count",
        "created_at",
        "updated_at",
    ]


def test_o_can_1_cancelled_view() -> None:
    later = NOW + timedelta(seconds=1)
    view = task_view(cancelled(make(), 2, later))  # type: ignore[arg-type]
    assert view["state"] == "CANCELLED" and view["revision"] == "2"
    assert view["cancel_requested_at"] == view["completed_at"] == "2026-09-17T00:00:01Z"
    assert view["updated_at"] == "2026-09-17T00:00:01Z"
