"""Execution history views (docs/orbit/execution-history.md): the attempt object, evidence
items and the attempts cursor (keyset on `number`, bound to its task). Pure."""

from __future__ import annotations

import base64
import binascii
import re
from datetime import timedelta
from typing import Any

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonValue, RawJson
from agentcall.orbit.domain.times import format_time

MAX_CURSOR_CHARS = 1024
_VERSION = "a1"
_CURSOR = re.compile(r"[A-Za-z0-9_-]+\Z")
_BODY = re.compile(r"a1\|([0-9a-f]{32})\|([1-9][0-9]{0,9})\Z")


def encode_cursor(task_id: str, after_number: int) -> str:
    raw = f"{_VERSION}|{task_id}|{after_number}".encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(text: str, task_id: str) -> int:
    """The attempt number the page starts after; 400 for garbage or another task's cursor."""
    if not 1 <= len(text) <= MAX_CURSOR_CHARS or not _CURSOR.match(text):
        raise InvalidArgument("not a cursor returned by this endpoint", "cursor")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument("not a cursor returned by this endpoint", "cursor") from None
    match = _BODY.match(raw)
    if match is None:
        raise InvalidArgument("not a cursor returned by this endpoint", "cursor")
    if match.group(1) != task_id:
        raise InvalidArgument("the cursor belongs to another task", "cursor")
    return int(match.group(2))


def attempt_view(row: Any) -> dict[str, JsonValue]:
    """The attempt object (without `evidence`) from a `task_attempts` row."""
    view: dict[str, JsonValue] = {
        "id": row.id,
        "task_id": row.task_id,
        "number": row.number,
        "state": row.state,
        "worker": _worker(row),
        "leased_at": format_time(row.leased_at),
    }
    live = row.ended_at is None
    if live:
        view["lease_expires_at"] = format_time(row.lease_expires_at)
    view["attempt_deadline_at"] = format_time(row.attempt_deadline_at)
    _time(view, "started_at", row.started_at)
    _time(view, "last_heartbeat_at", row.last_heartbeat_at)
    _time(view, "ended_at", row.ended_at)
    if row.ended_at is not None and row.started_at is not None:
        view["duration_ms"] = (row.ended_at - row.started_at) // timedelta(milliseconds=1)
    if row.end_reason is not None:
        view["end_reason"] = row.end_reason
    if row.error_code is not None:
        error: dict[str, JsonValue] = {"code": row.error_code, "message": row.error_message}
        if row.error_retryable is not None:
            error["retryable"] = bool(row.error_retryable)
        view["error"] = error
    if row.task_state_after is not None:
        view["task_outcome"] = {
            "state": row.task_state_after,
            "revision": str(row.task_revision_after),
        }
    view["evidence_count"] = row.evidence_count
    return view


def _worker(row: Any) -> dict[str, JsonValue]:
    worker: dict[str, JsonValue] = {"name": row.worker_name, "instance_id": row.worker_instance_id}
    for key in ("sdk", "host", "pid"):
        value = getattr(row, f"worker_{key}")
        if value is not None:
            worker[key] = value
    worker["connection_id"] = row.connection_id
    return worker


def _time(view: dict[str, JsonValue], key: str, value: Any) -> None:
    if value is not None:
        view[key] = format_time(value)


def evidence_view(row: Any) -> dict[str, JsonValue]:
    view: dict[str, JsonValue] = {"id": row.id, "key": row.ev_key, "kind": row.kind}
    for key in ("name", "uri", "media_type", "size_bytes", "sha256"):
        value = getattr(row, key)
        if value is not None:
            view[key] = value
    if row.data is not None:
        view["data"] = RawJson(row.data)
    view["created_at"] = format_time(row.created_at)
    return view
