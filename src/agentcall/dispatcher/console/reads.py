"""The console's queries over the Dispatcher's state database, on a read-only connection of
their own (opened per read on a worker thread, ``mode=ro`` and ``query_only``): they never
queue behind the D's writer thread and can change nothing.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from agentcall.dispatcher.console.aggregate import HOUR, WINDOW
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


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def admission_rows(conn: sqlite3.Connection, now: datetime) -> list[tuple[str, str, Any, Any]]:
    """(task_id, decision, reason_code, received_at) of the commands of the last hour."""
    rows = conn.execute(
        "SELECT task_id, decision, reason_code, received_at FROM inbox WHERE received_at >= ?",
        ((now - HOUR).isoformat(timespec="microseconds"),),
    )
    return [(t, d, r, datetime.fromisoformat(at)) for t, d, r, at in rows]


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
    """One finalized call of the window: when the D saw it end, how, how long, its quality."""

    ended_at: datetime
    outcome: str
    duration_s: float
    quality: dict[str, Any] | None


_ENDED = (
    "SELECT ended_at, json_extract(end_json, '$.outcome'), json_extract(end_json, '$.started_at'),"
    " json_extract(end_json, '$.ended_at'), json_extract(end_json, '$.quality')"
    " FROM executions WHERE state = 'finalized' AND ended_at >= ?"
)


def ended_calls(conn: sqlite3.Connection, now: datetime) -> list[Ended]:
    """The calls finalized with an end in the last six hours."""
    found = []
    since = (now - WINDOW).isoformat(timespec="microseconds")
    for seen, outcome, started, ended, quality in conn.execute(_ENDED, (since,)):
        start, end = _time(started), _time(ended)
        duration = max(0.0, (end - start).total_seconds()) if start and end else 0.0
        summary = json.loads(quality) if quality else None
        found.append(Ended(datetime.fromisoformat(seen), str(outcome), duration, summary))
    return found


_RESULTS = (
    "SELECT e.call_id, e.task_id, e.trunk_id, e.finalized_at, e.end_json,"
    " r.state, r.object_key, r.error_code"
    " FROM executions e LEFT JOIN recordings r ON r.execution_id = e.execution_id"
    " WHERE e.state = 'finalized' ORDER BY e.finalized_at DESC, e.call_id LIMIT ?"
)


def _recording(state: str | None, key: str | None, error: str | None) -> dict[str, Any]:
    if state is None:
        return {"status": "not_created", "object_key": None, "error_code": None}
    return {"status": state, "object_key": key, "error_code": error}


def last_results(conn: sqlite3.Connection, limit: int = LAST_RESULTS) -> list[dict[str, Any]]:
    """The newest call results, as the SaaS receives them: outcome, reason, duration,
    transcript, opt-out and recording status with its object key."""
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
            }
        )
    return found


def plumbing_facts(conn: sqlite3.Connection) -> dict[str, Any]:
    """When the discovery cursor last moved."""
    moved = conn.execute("SELECT updated_at FROM discovery WHERE id = 1").fetchone()
    return {"cursor_moved_at": _time(moved[0]) if moved else None}
