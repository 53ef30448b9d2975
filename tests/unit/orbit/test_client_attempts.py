"""SDK execution history models and calls (pure): optional fields stay None when omitted,
unknown fields are ignored, ids are checked before anything is sent."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentcall.orbit.sdk.client.attempts import (
    Attempt,
    ListAttemptsRequest,
    get_attempt,
    list_attempts,
)

LIVE = {
    "id": "a" * 32,
    "task_id": "b" * 32,
    "number": 1,
    "state": "LEASED",
    "worker": {"name": "w", "instance_id": "c" * 32, "connection_id": "d" * 32},
    "leased_at": "2026-09-17T00:00:00.001Z",
    "lease_expires_at": "2026-09-17T00:00:20Z",
    "attempt_deadline_at": "2026-09-17T00:00:30.001Z",
    "evidence_count": 0,
    "future": 1,
}


def test_a_live_attempt_parses_with_its_optional_fields_unset() -> None:
    attempt = Attempt.from_json(LIVE)
    assert attempt.lease_expires_at == datetime(2026, 9, 17, 0, 0, 20, tzinfo=UTC)
    assert (attempt.started_at, attempt.ended_at, attempt.error, attempt.task_outcome) == (
        None,
        None,
        None,
        None,
    )
    assert attempt.evidence is None and attempt.worker.pid is None


@pytest.mark.parametrize(
    ("request_", "path", "params"),
    [
        (ListAttemptsRequest("b" * 32), f"/v1/tasks/{'b' * 32}/attempts", {}),
        (
            ListAttemptsRequest("b" * 32, limit=5, cursor="xy"),
            f"/v1/tasks/{'b' * 32}/attempts",
            {"limit": "5", "cursor": "xy"},
        ),
    ],
)
def test_list_attempts_call(request_: ListAttemptsRequest, path: str, params: object) -> None:
    call = list_attempts(request_)
    assert (call.method, call.path, call.params) == ("GET", path, params)


@pytest.mark.parametrize(
    ("task_id", "attempt_id", "field"),
    [
        ("B" * 32, "a" * 32, "task_id"),
        ("b" * 32, "a" * 31, "attempt_id"),
        ("b" * 32, "../x", "attempt_id"),
    ],
)
def test_bad_ids_are_refused_before_sending(task_id: str, attempt_id: str, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        get_attempt(task_id, attempt_id)
