"""Manual retry and resolve decisions and request rules (docs/orbit/task-control.md §2, O-API-2)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentcall.orbit.domain.errors import InvalidArgument, StateConflict
from agentcall.orbit.domain.jsonvalue import JsonNumber
from agentcall.orbit.domain.review import (
    Resolution,
    ResolveRequest,
    RetryRequest,
    decide_resolve,
    decide_retry,
    parse_resolve,
    parse_retry,
    resolve_digest,
    retry_digest,
)
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import ALL_PERMISSIONS, Permission, parse_permission

pytestmark = pytest.mark.unit

NOW = datetime(2026, 9, 17, 12, 0, 0, tzinfo=UTC)
T = TaskState


def task(
    state: TaskState,
    *,
    revision: int = 5,
    used: int = 3,
    deadline_s: int = 3600,
    start_deadline_s: int | None = None,
) -> Task:
    start = None if start_deadline_s is None else NOW + timedelta(seconds=start_deadline_s)
    return Task(
        "t" * 32,
        "n" * 32,
        "q" * 32,
        state,
        revision,
        "h",
        "v1",
        "v1",
        "{}",
        None,
        NOW - timedelta(hours=1),
        start,
        NOW + timedelta(seconds=deadline_s),
        7_200_000,
        RecoverySafety.RECONCILE_ONLY,
        RetryPolicy(3, 1000, 30000, 30000),
        used,
        '{"x":1}',
        NOW - timedelta(minutes=1),
        NOW - timedelta(minutes=1),
        NOW - timedelta(hours=1),
        NOW - timedelta(minutes=1),
        error_code="HANDLER_FAILED",
        error_message="m",
        attempt_error_text='{"code":"x","message":"m"}',
    )


@pytest.mark.parametrize(
    ("source", "revision", "deadline_s", "start_deadline_s", "ok"),
    [
        (T.FAILED, 5, 3600, None, True),
        (T.NEEDS_REVIEW, 5, 3600, None, True),
        (T.FAILED, 4, 3600, None, False),  # stale revision
        (T.FAILED, 5, 0, None, False),  # task deadline reached
        (T.NEEDS_REVIEW, 5, 3600, 0, False),  # start deadline reached
        (T.WAITING, 5, 3600, None, False),
        (T.LEASED, 5, 3600, None, False),
        (T.RUNNING, 5, 3600, None, False),
        (T.SUCCEEDED, 5, 3600, None, False),
        (T.CANCELLED, 5, 3600, None, False),
    ],
)
def test_decide_retry(
    source: TaskState, revision: int, deadline_s: int, start_deadline_s: int | None, ok: bool
) -> None:
    """task-control.md §2: FAILED/NEEDS_REVIEW → WAITING with one more attempt, before the deadlines
    only."""
    before = task(source, deadline_s=deadline_s, start_deadline_s=start_deadline_s)
    request = RetryRequest(revision, "again")
    if not ok:
        with pytest.raises(StateConflict):
            decide_retry(before, request, NOW)
        return
    after = decide_retry(before, request, NOW)
    assert after.state is T.WAITING and after.revision == 6
    assert after.retry == replace(before.retry, max_attempts=4)  # attempt_count 3 + 1
    assert after.available_at == NOW == after.updated_at
    assert (
        after.result_text,
        after.error_code,
        after.error_message,
        after.attempt_error_text,
        after.cancel_requested_at,
        after.completed_at,
    ) == (None,) * 6


def _resolve(outcome: Resolution, revision: int = 5) -> ResolveRequest:
    if outcome is Resolution.SUCCEEDED:
        return ResolveRequest(revision, outcome, "ok", '{"a":1}', None, None, ())
    return ResolveRequest(revision, outcome, "no", None, "refused", "the bank refused", ())


@pytest.mark.parametrize(
    ("source", "outcome", "revision", "expected"),
    [
        (T.NEEDS_REVIEW, Resolution.SUCCEEDED, 5, T.SUCCEEDED),
        (T.NEEDS_REVIEW, Resolution.FAILED, 5, T.FAILED),
        (T.NEEDS_REVIEW, Resolution.FAILED, 6, StateConflict),
        (T.FAILED, Resolution.SUCCEEDED, 5, StateConflict),
        (T.RUNNING, Resolution.SUCCEEDED, 5, StateConflict),
        (T.WAITING, Resolution.FAILED, 5, StateConflict),
    ],
)
def test_decide_resolve(
    source: TaskState, outcome: Resolution, revision: int, expected: Any
) -> None:
    before = task(source)
    request = _resolve(outcome, revision)
    if expected is StateConflict:
        with pytest.raises(StateConflict):
            decide_resolve(before, request, NOW)
        return
    after = decide_resolve(before, request, NOW)
    assert after.state is expected and after.revision == 6 and after.completed_at == NOW
    assert after.result_text == request.result_text and after.error_code == request.error_code
    assert after.attempt_error_text is None


BASE = {"expected_revision": "3", "reason": "checked"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reason": "r"}, "expected_revision"),
        ({**BASE, "expected_revision": "0"}, "expected_revision"),
        ({**BASE, "reason": ""}, "reason"),
        ({**BASE, "outcome": "succeeded"}, "outcome"),  # retry has no outcome
    ],
)
def test_retry_body_rejected(body: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_retry(body)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (BASE, "outcome"),
        ({**BASE, "outcome": "cancelled"}, "outcome"),
        ({**BASE, "outcome": "succeeded"}, "result"),
        ({**BASE, "outcome": "succeeded", "result": None}, "result"),
        ({**BASE, "outcome": "succeeded", "result": 1, "error": {}}, "error"),
        ({**BASE, "outcome": "failed"}, "error"),
        (
            {
                **BASE,
                "outcome": "failed",
                "error": {"code": "x", "message": "m", "retryable": True},
            },
            "error.retryable",
        ),
        ({**BASE, "outcome": "failed", "error": {"code": "a b", "message": "m"}}, "error.code"),
        (
            {
                **BASE,
                "outcome": "succeeded",
                "result": 1,
                "evidence": [{"key": "k" * 120, "kind": "note", "data": 1}],
            },
            "evidence[0].key",
        ),
        ({**BASE, "outcome": "succeeded", "result": 1, "evidence": []}, "evidence"),
    ],
)
def test_resolve_body_rejected(body: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_resolve(body)
    assert caught.value.field == field


def test_digests_cover_the_content() -> None:
    """O-SUB-1: a replay needs the same content; any change conflicts."""
    assert retry_digest(RetryRequest(1, "r")) == retry_digest(
        parse_retry({"expected_revision": "1", "reason": "r"})
    )
    assert retry_digest(RetryRequest(1, "r")) != retry_digest(RetryRequest(2, "r"))
    body: dict[str, Any] = {
        **BASE,
        "outcome": "succeeded",
        "result": {"b": 1, "a": JsonNumber("1.0")},
    }
    same: dict[str, Any] = {**BASE, "outcome": "succeeded", "result": {"a": 1, "b": 1}}
    assert resolve_digest(parse_resolve(body)) == resolve_digest(parse_resolve(same))
    other: dict[str, Any] = {**BASE, "outcome": "succeeded", "result": {"a": 2, "b": 1}}
    assert resolve_digest(parse_resolve(body)) != resolve_digest(parse_resolve(other))
    noted: dict[str, Any] = {**same, "evidence": [{"key": "k", "kind": "note", "data": 1}]}
    assert resolve_digest(parse_resolve(noted)) != resolve_digest(parse_resolve(same))


def test_tasks_review_permission_o_api_1() -> None:
    """`orbit token create --permission tasks:review` parses it; `orbit init` grants it."""
    assert parse_permission("tasks:review") is Permission.REVIEW
    assert Permission.REVIEW in ALL_PERMISSIONS
