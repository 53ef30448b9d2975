"""Armed faults: consumed one per matching response."""

from __future__ import annotations

import sqlite3
from typing import Any

from agentcall.mocksaas.domain.faults import ConfigResource, Fault, FaultScope


def _row(r: sqlite3.Row) -> Fault:
    return Fault(
        r["id"],
        FaultScope(r["scope"]),
        r["kind"],
        r["remaining"],
        ConfigResource(r["resource"]) if r["resource"] else None,
        r["target"],
        r["delay_ms"],
    )


def arm(conn: sqlite3.Connection, dispatcher_id: str, fault: Fault) -> Fault:
    cur = conn.execute(
        "INSERT INTO faults (dispatcher_id, scope, kind, resource, target, remaining, delay_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            dispatcher_id,
            fault.scope.value,
            fault.kind,
            fault.resource.value if fault.resource else None,
            fault.target,
            fault.remaining,
            fault.delay_ms,
        ),
    )
    row = conn.execute("SELECT * FROM faults WHERE id = ?", (cur.lastrowid,)).fetchone()
    return _row(row)


def take(
    conn: sqlite3.Connection,
    dispatcher_id: str,
    scope: FaultScope,
    resource: ConfigResource | None,
    target: str | None,
) -> Fault | None:
    """The oldest armed fault matching this response, with one use consumed."""
    rows = conn.execute(
        "SELECT * FROM faults WHERE dispatcher_id = ? AND scope = ? AND remaining > 0 ORDER BY id",
        (dispatcher_id, scope.value),
    ).fetchall()
    for r in rows:
        fault = _row(r)
        if fault.matches(resource, target):
            conn.execute(
                "UPDATE faults SET remaining = remaining - 1 WHERE id = ?", (fault.fault_id,)
            )
            conn.execute("DELETE FROM faults WHERE remaining <= 0")
            return fault
    return None


def list_for(conn: sqlite3.Connection, dispatcher_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT * FROM faults WHERE dispatcher_id = ? ORDER BY id", (dispatcher_id,)
    )
    return [{k: r[k] for k in r.keys() if k != "dispatcher_id"} for r in rows]


def clear(conn: sqlite3.Connection, dispatcher_id: str) -> int:
    return conn.execute("DELETE FROM faults WHERE dispatcher_id = ?", (dispatcher_id,)).rowcount
