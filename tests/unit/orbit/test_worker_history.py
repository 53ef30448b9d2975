"""Execution history views and the attempts cursor (docs/orbit/execution-history.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from agentcall.orbit.api.history import (
    attempt_view,
    decode_cursor,
    encode_cursor,
    evidence_view,
)
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import dumps

pytestmark = pytest.mark.unit
T1, T2 = "1" * 32, "2" * 32
NOW = datetime(2026, 9, 17, 0, 0, 0, 1000, tzinfo=UTC)


def test_cursor_round_trip_and_binding() -> None:
    cursor = encode_cursor(T1, 7)
    assert decode_cursor(cursor, T1) == 7
    with pytest.raises(InvalidArgument, match="another task"):
        decode_cursor(cursor, T2)


@pytest.mark.parametrize(
    "cursor", ["", "x" * 1025, "not a cursor!", "YTF8", encode_cursor(T1, 7)[:-2], "===="]
)
def test_cursor_garbage_is_invalid_argument(cursor: str) -> None:
    with pytest.raises(InvalidArgument, match="cursor"):
        decode_cursor(cursor, T1)


def row(**changes: Any) -> SimpleNamespace:
    base: dict[str, Any] = {
        "id": "a" * 32,
        "task_id": T1,
        "number": 1,
        "state": "RUNNING",
        "worker_name": "w",
        "worker_instance_id": "i" * 32,
        "worker_sdk": None,
        "worker_host": "h",
        "worker_pid": 7,
        "connection_id": "c" * 32,
        "leased_at": NOW,
        "lease_expires_at": NOW + timedelta(seconds=15),
        "attempt_deadline_at": NOW + timedelta(seconds=30),
        "started_at": NOW,
        "last_heartbeat_at": None,
        "ended_at": None,
        "end_reason": None,
        "error_code": None,
        "error_message": None,
        "error_retryable": None,
        "task_state_after": None,
        "task_revision_after": None,
        "evidence_count": 0,
    }
    base.update(changes)
    return SimpleNamespace(**base)


def test_live_attempt_view_omits_unset_fields() -> None:
    view = attempt_view(row())
    assert view["lease_expires_at"] == "2026-09-17T00:00:15.001Z"
    assert view["worker"] == {
        "name": "w",
        "instance_id": "i" * 32,
        "host": "h",
        "pid": 7,
        "connection_id": "c" * 32,
    }
    for absent in ("ended_at", "duration_ms", "end_reason", "error", "task_outcome"):
        assert absent not in view


def test_ended_attempt_view_has_outcome_error_and_duration() -> None:
    ended = row(
        state="FAILED",
        ended_at=NOW + timedelta(milliseconds=812),
        end_reason="RESULT",
        error_code="upstream",
        error_message="503",
        error_retryable=1,
        task_state_after="WAITING",
        task_revision_after=5,
    )
    view = attempt_view(ended)
    assert "lease_expires_at" not in view
    assert view["duration_ms"] == 812
    assert view["error"] == {"code": "upstream", "message": "503", "retryable": True}
    assert view["task_outcome"] == {"state": "WAITING", "revision": "5"}


def test_evidence_view_returns_data_exactly() -> None:
    item = SimpleNamespace(
        id="e" * 32,
        ev_key="k",
        kind="note",
        name=None,
        uri=None,
        media_type=None,
        size_bytes=None,
        sha256=None,
        data='{"n":9007199254740993}',
        created_at=NOW,
    )
    assert dumps(evidence_view(item)) == (
        '{"id":"' + "e" * 32 + '","key":"k","kind":"note","data":{"n":9007199254740993},'
        '"created_at":"2026-09-17T00:00:00.001Z"}'
    )
