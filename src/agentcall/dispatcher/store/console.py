"""The console's queries over the Dispatcher's state database, on a read-only connection of
their own (opened per read on a worker thread, ``mode=ro`` and ``query_only``): they never
queue behind the D's writer thread and can change nothing. The console
(``agentcall.dispatcher.console``) decides what they mean; the SQL is here, with every other
feature's.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from agentcall.dispatcher.domain.states import ExecutionState

T = TypeVar("T")
LAST_RESULTS = 100
HOLDING = tuple(s.value for s in ExecutionState if s.holds_occupancy)


class Reader:
    """Runs one query function ``fn(conn, ...)`` on a fresh read-only connection."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _run(self, fn: Callable[..., T], *args: Any) -> T:
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5)
        try:
            conn.execute("PRAGMA query_only = 1")
            return fn(conn, *args)
        finally:
            conn.close()

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(self._run, fn, *args)

    async def read_each(self, *queries: tuple[Callable[..., Any], tuple[Any, ...]]) -> list[Any]:
        """Several query functions ``(fn, args)`` on one connection: one open, one thread hop."""

        def each(conn: sqlite3.Connection) -> list[Any]:
            return [fn(conn, *args) for fn, args in queries]

        return await self.read(each)


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def admission_rows(conn: sqlite3.Connection, since: datetime) -> list[tuple[str, str, Any, int]]:
    """(task_id, decision, reason_code, how many) of the commands received since `since`."""
    rows = conn.execute(
        "SELECT task_id, decision, reason_code, count(*) FROM inbox WHERE received_at >= ?"
        " GROUP BY task_id, decision, reason_code",
        (since.isoformat(timespec="microseconds"),),
    )
    return list(rows)


def active_calls(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """Executions holding capacity, counted by tenant, task and trunk (D-CMD-4)."""
    marks = ",".join("?" * len(HOLDING))
    found: dict[str, dict[str, int]] = {"tenants": {}, "tasks": {}, "trunks": {}}
    rows = conn.execute(
        f"SELECT tenant_id, task_id, trunk_id FROM executions WHERE state IN ({marks})", HOLDING
    )
    for row in rows:
        for scope, key in zip(("tenants", "tasks", "trunks"), row, strict=True):
            found[scope][key] = found[scope].get(key, 0) + 1
    return found


@dataclass(frozen=True, slots=True)
class Ended:
    """Finalized calls of the window alike in all of: the 5-minute bucket the D saw them end
    in, outcome, whole seconds of duration, RTP loss ratio and whole ms of jitter (None
    without media figures); ``count`` of them."""

    bucket: datetime
    outcome: str
    duration_s: int
    loss: float | None
    jitter_ms: int | None
    count: int


# Grouped in SQL so that a busy D's six hours come back as a few hundred rows: whole
# seconds and whole milliseconds keep every call in its bin (the bins' edges are whole).
_ENDED = (
    "SELECT CAST(strftime('%s', ended_at) AS INTEGER) / 300,"
    " json_extract(end_json, '$.outcome'),"
    " CAST(max(0.0, julianday(json_extract(end_json, '$.ended_at'))"
    "  - julianday(json_extract(end_json, '$.started_at'))) * 86400 AS INTEGER),"
    " json_extract(end_json, '$.quality.rtp.loss_ratio'),"
    " CAST(json_extract(end_json, '$.quality.rtp.jitter_ms') AS INTEGER), count(*)"
    " FROM executions WHERE state = 'finalized' AND ended_at >= ? GROUP BY 1, 2, 3, 4, 5"
)


def ended_calls(conn: sqlite3.Connection, since: datetime) -> list[Ended]:
    """The calls finalized with an end since `since`, grouped (see :class:`Ended`)."""
    return [
        Ended(
            datetime.fromtimestamp(slot * 300, UTC),
            str(outcome),
            duration or 0,
            loss,
            jitter,
            count,
        )
        for slot, outcome, duration, loss, jitter, count in conn.execute(
            _ENDED, (since.isoformat(timespec="microseconds"),)
        )
    ]


_RESULTS = (
    "SELECT e.call_id, e.task_id, e.trunk_id, e.finalized_at, e.end_json,"
    " r.state, r.object_key, r.error_code"
    " FROM executions e LEFT JOIN recordings r ON r.execution_id = e.execution_id"
    " WHERE e.state = 'finalized' ORDER BY e.finalized_at DESC LIMIT ?"
)


def _recording(state: str | None, key: str | None, error: str | None) -> dict[str, Any]:
    if state is None:
        return {"status": "not_created", "object_key": None, "error_code": None}
    return {"status": state, "object_key": key, "error_code": error}


def last_results(conn: sqlite3.Connection, limit: int = LAST_RESULTS) -> list[dict[str, Any]]:
    """The newest call results, as the SaaS receives them: outcome, reason, duration,
    transcript, opt-out, recording status with its object key, and the cell's media and
    voice figures (``quality``, SIP calls only)."""
    found = []
    for call_id, task_id, trunk_id, at, end_json, state, key, error in conn.execute(
        _RESULTS, (limit,)
    ):
        end = json.loads(end_json) if end_json else {}
        start, stop = _time(end.get("started_at")), _time(end.get("ended_at"))
        found.append(
            {
                "call_id": call_id,
                "task_id": task_id,
                "trunk_id": trunk_id,
                "finalized_at": _time(at),
                "outcome": end.get("outcome"),
                "reason_code": end.get("reason_code"),
                "duration_s": (stop - start).total_seconds() if start and stop else None,
                "transcript": list(end.get("transcript") or []),
                "opt_out": bool(end.get("opt_out")),
                "recording": _recording(state, key, error),
                "quality": end.get("quality") if isinstance(end.get("quality"), dict) else None,
            }
        )
    return found


def plumbing_facts(conn: sqlite3.Connection) -> dict[str, Any]:
    """When the discovery cursor last moved."""
    moved = conn.execute("SELECT updated_at FROM discovery WHERE id = 1").fetchone()
    return {"cursor_moved_at": _time(moved[0]) if moved else None}


@dataclass(frozen=True, slots=True)
class Live:
    """A call holding capacity now: accepted, dialing, ringing, in call or unknown."""

    call_id: str
    task_id: str
    state: str
    callee: str
    accepted_at: datetime
    dial_started_at: datetime | None


LIVE_LIMIT = 200
_LIVE = (
    "SELECT call_id, task_id, state, json_extract(snapshot_json, '$.callee'), accepted_at,"
    " dial_started_at FROM executions WHERE state IN ({marks})"
    " ORDER BY accepted_at, call_id LIMIT ?"
)


def live_calls(conn: sqlite3.Connection, limit: int = LIVE_LIMIT) -> list[Live]:
    """The oldest ``limit`` calls holding capacity (D-CMD-4), oldest first."""
    sql = _LIVE.format(marks=",".join("?" * len(HOLDING)))
    return [
        Live(call_id, task_id, state, str(callee or ""), _time(accepted) or _EPOCH, _time(dialed))
        for call_id, task_id, state, callee, accepted, dialed in conn.execute(
            sql, (*HOLDING, limit)
        )
    ]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TASK_OUTCOMES = (
    "SELECT task_id, json_extract(end_json, '$.outcome'), count(*),"
    " sum(max(0.0, julianday(json_extract(end_json, '$.ended_at'))"
    "  - julianday(json_extract(end_json, '$.started_at'))) * 86400)"
    " FROM executions WHERE state = 'finalized' AND ended_at >= ? GROUP BY 1, 2"
)


def task_outcomes(conn: sqlite3.Connection, since: datetime) -> list[tuple[str, str, int, float]]:
    """(task_id, outcome, how many, their summed duration in seconds) of the calls
    finalized with an end since ``since``."""
    return [
        (task_id, str(outcome), count, float(seconds or 0.0))
        for task_id, outcome, count, seconds in conn.execute(
            _TASK_OUTCOMES, (since.isoformat(timespec="microseconds"),)
        )
    ]


_RECORDING = (
    "SELECT object_key FROM recordings WHERE call_id = ? AND state = 'uploaded'"
    " AND object_key IS NOT NULL"
)


def uploaded_recording(conn: sqlite3.Connection, call_id: str) -> str | None:
    """The object key of the call's recording once it is uploaded and verified."""
    row = conn.execute(_RECORDING, (call_id,)).fetchone()
    return str(row[0]) if row else None
