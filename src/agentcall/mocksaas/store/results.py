"""Received results: every body is kept; validity and delivery counts are queryable."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import astuple, dataclass, fields
from typing import Any

from agentcall.mocksaas.domain.results import ResultFacts, parse_body

_FACT_COLUMNS = [f.name for f in fields(ResultFacts)]


@dataclass(frozen=True)
class ReceivedResult:
    dispatcher_id: str
    received_at: str
    redelivered: bool
    facts: ResultFacts
    errors: tuple[str, ...]
    body: bytes

    @property
    def valid(self) -> bool:
        return not self.errors


def insert(conn: sqlite3.Connection, r: ReceivedResult) -> int:
    columns = [
        "dispatcher_id",
        "received_at",
        "redelivered",
        *_FACT_COLUMNS,
        "valid",
        "errors",
        "body",
    ]
    values = (
        r.dispatcher_id,
        r.received_at,
        int(r.redelivered),
        *astuple(r.facts),
        int(r.valid),
        json.dumps(list(r.errors)),
        r.body,
    )
    cur = conn.execute(
        f"INSERT INTO results ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        values,
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


def deliveries(conn: sqlite3.Connection, dispatcher_id: str, event_id: str) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM results WHERE dispatcher_id = ? AND event_id = ?",
            (dispatcher_id, event_id),
        ).fetchone()[0]
    )


def _public(row: sqlite3.Row, counts: dict[str, int]) -> dict[str, Any]:
    body = bytes(row["body"])
    parsed, _ = parse_body(body)  # strict: what it returns can be answered as JSON
    out = {c: row[c] for c in ("id", "received_at", *_FACT_COLUMNS)}
    out.update(
        redelivered=bool(row["redelivered"]),
        valid=bool(row["valid"]),
        errors=json.loads(row["errors"]),
        deliveries=counts.get(row["event_id"], 0) if row["event_id"] else 1,
        body=parsed,
        raw=None if parsed is not None else body.decode("utf-8", "replace")[:2000],
    )
    return out


def _delivery_counts(conn: sqlite3.Connection, dispatcher_id: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT event_id, COUNT(*) FROM results WHERE dispatcher_id = ? AND event_id IS NOT NULL"
        " GROUP BY event_id",
        (dispatcher_id,),
    )
    return {str(r[0]): int(r[1]) for r in rows}


def query(
    conn: sqlite3.Connection, dispatcher_id: str, filters: dict[str, Any], limit: int
) -> list[dict[str, Any]]:
    """Stored results, oldest first; ``filters`` on fact columns and ``valid``."""
    where = ["dispatcher_id = ?"]
    args: list[Any] = [dispatcher_id]
    for column, value in filters.items():
        if column in _FACT_COLUMNS or column == "valid":
            where.append(f"{column} = ?")
            args.append(int(value) if column == "valid" else value)
    args.append(limit)
    rows = conn.execute(
        f"SELECT * FROM results WHERE {' AND '.join(where)} ORDER BY id LIMIT ?", args
    )
    counts = _delivery_counts(conn, dispatcher_id)
    return [_public(r, counts) for r in rows]


def summary(conn: sqlite3.Connection, dispatcher_id: str) -> dict[str, Any]:
    """Counts over the *distinct* events (first delivery) plus duplicates and invalid ones."""
    rows = conn.execute(
        "SELECT event_id, event_type, command_type, status, reason_code, outcome, valid, id"
        " FROM results WHERE dispatcher_id = ? ORDER BY id",
        (dispatcher_id,),
    ).fetchall()
    seen: set[str] = set()
    by: dict[str, Counter[str]] = {
        k: Counter() for k in ("event_type", "status", "reason_code", "outcome")
    }
    for r in rows:
        if r["event_id"] is not None and r["event_id"] in seen:
            continue
        if r["event_id"] is not None:
            seen.add(r["event_id"])
        for key in by:
            if r[key] is not None:
                label = (
                    f"{r['command_type']}:{r[key]}"
                    if key in ("status", "reason_code") and r["command_type"]
                    else r[key]
                )
                by[key][label] += 1
    counts = _delivery_counts(conn, dispatcher_id)
    return {
        "deliveries": len(rows),
        "distinct_events": len(seen),
        "by_event_type": dict(by["event_type"]),
        "by_status": dict(by["status"]),
        "by_reason_code": dict(by["reason_code"]),
        "by_outcome": dict(by["outcome"]),
        "duplicates": {e: n for e, n in counts.items() if n > 1},
        "invalid": sum(1 for r in rows if not r["valid"]),
    }
