"""The ``recordings`` table (migration 0003): one row per expected recording."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from agentcall.dispatcher.domain.recording import (
    ErrorCode,
    Media,
    Recording,
    RecordingState,
    Source,
)
from agentcall.dispatcher.store.codec import iso

_COLUMNS = (
    "execution_id, call_id, recording_id, upload_id, bucket, object_key, source, state,"
    " media_json, ended_at, deadline_at, authorizations, authorized_until, error_code, detail,"
    " renewal_requested_at, grant_url"
)
_CLOSED = tuple(s.value for s in RecordingState if s.closed)


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _row(row: tuple[Any, ...]) -> Recording:
    (execution_id, call_id, recording_id, upload_id, bucket, key, source, state, media) = row[:9]
    ended_at, deadline_at, authorizations, until, error_code, detail, renewal, grant = row[9:]
    return Recording(
        execution_id=execution_id,
        call_id=call_id,
        recording_id=recording_id,
        upload_id=upload_id,
        bucket=bucket,
        object_key=key,
        source=Source(source),
        state=RecordingState(state),
        media=Media.from_json(json.loads(media)) if media else None,
        ended_at=datetime.fromisoformat(ended_at),
        deadline_at=datetime.fromisoformat(deadline_at),
        authorizations=authorizations,
        authorized_until=_time(until),
        error_code=ErrorCode(error_code) if error_code else None,
        detail=detail,
        renewal_requested=renewal is not None,
        grant_url=grant,
    )


def _media(rec: Recording) -> str | None:
    return json.dumps(rec.media.to_json(), separators=(",", ":")) if rec.media else None


def insert(conn: sqlite3.Connection, rec: Recording, now: datetime) -> bool:
    """Open a recording; False when the call already has one (replayed end)."""
    at = iso(now)
    cursor = conn.execute(
        f"INSERT INTO recordings ({_COLUMNS}, opened_at, updated_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
        (
            rec.execution_id,
            rec.call_id,
            rec.recording_id,
            rec.upload_id,
            rec.bucket,
            rec.object_key,
            rec.source.value,
            rec.state.value,
            _media(rec),
            iso(rec.ended_at),
            iso(rec.deadline_at),
            rec.authorizations,
            iso(rec.authorized_until) if rec.authorized_until else None,
            rec.error_code.value if rec.error_code else None,
            rec.detail,
            at if rec.renewal_requested else None,
            rec.grant_url,
            at,
            at,
        ),
    )
    return cursor.rowcount == 1


def save(conn: sqlite3.Connection, rec: Recording, now: datetime) -> None:
    """Persist the mutable part of a recording (identity and deadline never change)."""
    at = iso(now)
    conn.execute(
        "UPDATE recordings SET state = ?, media_json = ?, authorizations = ?,"
        " authorized_until = ?, error_code = ?, detail = ?, updated_at = ?,"
        " closed_at = CASE WHEN ? THEN COALESCE(closed_at, ?) ELSE NULL END,"
        " renewal_requested_at = CASE WHEN ? THEN COALESCE(renewal_requested_at, ?) END,"
        " grant_url = ? WHERE execution_id = ?",
        (
            rec.state.value,
            _media(rec),
            rec.authorizations,
            iso(rec.authorized_until) if rec.authorized_until else None,
            rec.error_code.value if rec.error_code else None,
            (rec.detail or "")[:300] or None,
            at,
            rec.state.closed,
            at,
            rec.renewal_requested,
            at,
            rec.grant_url,
            rec.execution_id,
        ),
    )


def get(conn: sqlite3.Connection, execution_id: str) -> Recording | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM recordings WHERE execution_id = ?", (execution_id,)
    ).fetchone()
    return _row(row) if row else None


def by_call_id(conn: sqlite3.Connection, call_id: str) -> Recording | None:
    query = f"SELECT {_COLUMNS} FROM recordings WHERE call_id = ?"
    row = conn.execute(query, (call_id,)).fetchone()
    return _row(row) if row else None


def open_rows(conn: sqlite3.Connection, limit: int = 10_000) -> list[Recording]:
    marks = ",".join("?" * len(_CLOSED))
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM recordings WHERE state NOT IN ({marks})"
        " ORDER BY deadline_at LIMIT ?",
        (*_CLOSED, limit),
    )
    return [_row(row) for row in rows]


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Recordings by state, and closed-unavailable ones by error code (for /status)."""
    result = {state.value: 0 for state in RecordingState}
    for state, count in conn.execute("SELECT state, count(*) FROM recordings GROUP BY state"):
        result[state] = count
    for code, count in conn.execute(
        "SELECT error_code, count(*) FROM recordings WHERE error_code IS NOT NULL"
        " GROUP BY error_code"
    ):
        result[f"unavailable:{code}"] = count
    return result


def waiting_calls(conn: sqlite3.Connection) -> list[str]:
    """Call ids of recordings still waiting for the cell to report their file."""
    rows = conn.execute("SELECT call_id FROM recordings WHERE state = 'waiting'")
    return [row[0] for row in rows]
