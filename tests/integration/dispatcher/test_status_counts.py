"""Outbox counts of /status on a real SQLite file: exact, and read from indexes only."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentcall.dispatcher.store import outbox
from agentcall.dispatcher.store.db import migrate

pytestmark = pytest.mark.integration
NOW = datetime(2026, 9, 21, 2, tzinfo=UTC)
OVERSIZE = {"blob": "x" * (outbox.MAX_BODY_BYTES + 1)}


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "state.sqlite", isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    migrate(connection)
    yield connection
    connection.close()


def _reference(conn: sqlite3.Connection) -> dict[str, int]:
    """The counts as a full GROUP BY over the table gives them."""
    result = {"pending": 0, "delivered": 0, "blocked_payload_too_large": 0}
    for state, count in conn.execute("SELECT state, count(*) FROM outbox GROUP BY state"):
        result[state] = count
    return result


def _enqueue(conn: sqlite3.Connection, event_id: str, big: bool = False) -> None:
    body = OVERSIZE if big else {"event_id": event_id}
    outbox.enqueue(
        conn, event_id=event_id, event_type="call.result", routing_key="r", body=body, now=NOW
    )


def test_empty_outbox_counts_zero_everywhere(conn: sqlite3.Connection) -> None:
    assert outbox.counts(conn) == {"pending": 0, "delivered": 0, "blocked_payload_too_large": 0}


def test_counts_stay_exact_through_every_outbox_transition_d_mq_4(
    conn: sqlite3.Connection,
) -> None:
    """D-MQ-4 / D-ID-3: pending, delivered and blocked match a full count after each step."""
    rng = random.Random(4)
    _enqueue(conn, "big-1", big=True)
    for step in range(300):
        action = rng.random()
        if action < 0.5:
            _enqueue(conn, f"e-{rng.randrange(200)}")  # repeats keep the first row
        elif action < 0.8:
            seqs = [rng.randrange(1, 220) for _ in range(rng.randrange(1, 6))]
            outbox.mark_delivered(conn, seqs, NOW)  # unknown or delivered seqs: no change
        else:
            outbox.mark_failed(conn, [(rng.randrange(1, 220), "nack")])
        assert outbox.counts(conn) == _reference(conn), f"step {step}"
    counted = outbox.counts(conn)
    assert counted["blocked_payload_too_large"] == 1
    assert counted["pending"] > 0 and counted["delivered"] > 0


def test_counts_and_blocked_list_never_scan_the_bodies(conn: sqlite3.Connection) -> None:
    """Every part of the status queries is served by an index (0004_outbox_status_counts)."""
    for sql in (
        outbox._COUNTS,
        "SELECT event_id FROM outbox WHERE state = 'blocked_payload_too_large'"
        " ORDER BY seq LIMIT 20",
    ):
        plan = [detail for *_, detail in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
        scans = [d for d in plan if d.startswith(("SCAN outbox", "SEARCH outbox"))]
        assert scans and all("INDEX" in d for d in scans), plan


def test_a_state_file_from_before_0004_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        migrate(connection)
        connection.execute("DROP INDEX outbox_blocked")
        connection.execute("DELETE FROM schema_migrations WHERE version = 4")
        _enqueue(connection, "old-1")
        _enqueue(connection, "old-big", big=True)
        assert migrate(connection) >= 4
        names = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
        assert "outbox_blocked" in names
        assert outbox.counts(connection) == _reference(connection)
        assert [r["event_id"] for r in outbox.blocked(connection)] == ["old-big"]
    finally:
        connection.close()
