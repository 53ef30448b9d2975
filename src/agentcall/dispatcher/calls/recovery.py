"""Reconciliation with the cell after a D restart and after a cell restart (crash rule).

* **D restart** — anything between "originate sent" and "call ended known" becomes
  ``unknown`` (occupancy kept) and is matched against the cell's calls: a live call goes
  back to its live state and continues, a call that ended meanwhile is finalized once,
  and nothing is ever redialled. The event stream resumes after the persisted
  ``(boot_id, seq)`` position.
* **Cell restart** (a new boot id) — the old boot's calls are gone: each affected
  execution is finalized once as ``failed`` with reason ``cell_restarted``; a recording
  the dead cell left on disk (an orphan, possibly partial) is uploaded like any other.
* **Same boot, call unknown to the cell** — once the originate can no longer be in flight
  (``grace_s`` after the dial started) it is finalized as ``failed`` /
  ``cell_has_no_call``; before that it stays ``unknown``.

``judge`` is the pure decision; the rest applies it (one transaction per round).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agentcall.dispatcher.calls import events as ev
from agentcall.dispatcher.cell.port import CellCall, CellEvent, CellOrphan, CellPort
from agentcall.dispatcher.domain.recording import Recording
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.domain.states import IllegalTransition
from agentcall.dispatcher.finalize.result import Ending, end_and_finalize, failed_ending
from agentcall.dispatcher.recording import transaction as recording_tx
from agentcall.dispatcher.store import executions
from agentcall.dispatcher.store import recordings as recording_store
from agentcall.dispatcher.store.codec import iso
from agentcall.dispatcher.store.db import Database

LIVE = (S.DIALING, S.RINGING, S.IN_CALL)
_CELL_STATES = {"dialing": S.DIALING, "ringing": S.RINGING, "answered": S.IN_CALL}
LOST_RESTARTED = "cell_restarted"
LOST_NO_CALL = "cell_has_no_call"


@dataclass(frozen=True)
class Pending:
    """An execution whose call may be live: dialing, ringing, in_call or unknown."""

    execution_id: str
    call_id: str
    state: S
    cell_boot_id: str | None
    dial_started_at: datetime | None


@dataclass(frozen=True)
class Follow:
    """The cell runs the call: back to (or stay in) its live state, keep following."""

    state: S
    boot_id: str


@dataclass(frozen=True)
class Finish:
    """The call ended (in the cell, or lost with it): end and finalize once."""

    ending: Ending


@dataclass(frozen=True)
class Hold:
    """Not decidable yet: stays as it is (unknown keeps its occupancy)."""

    why: str


Verdict = Follow | Finish | Hold


def orphan_recording(orphan: CellOrphan) -> dict[str, Any]:
    """The Ending.recording of a call lost with its cell whose file is on disk."""
    return {
        "source": recording_tx.ORPHAN,
        "upload": orphan.upload_status,
        "format": "wav",
        "channels": 1,
        "sample_rate_hz": 8000,
        "duration_ms": orphan.duration_ms,
        "size_bytes": orphan.size_bytes,
        "checksum_sha256": orphan.sha256,
        "partial": orphan.partial,
    }


def _lost(p: Pending, reason: str, orphan: CellOrphan | None, now: datetime) -> Finish:
    ending = failed_ending(p.dial_started_at or now, now, reason)
    if orphan is not None and orphan.size_bytes is not None and orphan.sha256:
        ending = Ending(ending.end, recording_expected=True, recording=orphan_recording(orphan))
    return Finish(ending)


def judge(
    p: Pending,
    call: CellCall | None,
    orphan: CellOrphan | None,
    boot: str,
    now: datetime,
    grace_s: float,
) -> Verdict:
    """What the cell's answer means for one pending execution (pure)."""
    if call is not None:
        if call.state == "ended":
            return Finish(ev.ending_from_call(call, now))
        return Follow(_CELL_STATES.get(call.state, S.DIALING), call.boot_id)
    if p.cell_boot_id is not None and p.cell_boot_id != boot:
        return _lost(p, LOST_RESTARTED, orphan, now)
    started = p.dial_started_at
    if started is None or now - started < timedelta(seconds=grace_s):
        return Hold("the originate may still be in flight")
    return _lost(p, LOST_NO_CALL, orphan, now)


# --- database side (runs on the database thread) ------------------------------------------


def pending_rows(conn: sqlite3.Connection) -> list[Pending]:
    states = [s.value for s in (*LIVE, S.UNKNOWN)]
    rows = conn.execute(
        "SELECT execution_id, call_id, state, cell_boot_id, dial_started_at FROM executions"
        f" WHERE state IN ({','.join('?' * len(states))}) ORDER BY accepted_at",
        states,
    )
    return [
        Pending(eid, cid, S(state), boot, datetime.fromisoformat(at) if at else None)
        for eid, cid, state, boot, at in rows
    ]


def mark_unknown(conn: sqlite3.Connection, boot: str | None, now: datetime) -> int:
    """Crash rule: live executions (of ``boot``, or all when None) become unknown."""
    moved = 0
    for p in pending_rows(conn):
        if p.state in LIVE and (boot is None or p.cell_boot_id in (boot, None)):
            executions.move(conn, p.execution_id, S.UNKNOWN, now)
            moved += 1
    return moved


def apply_verdicts(
    conn: sqlite3.Connection,
    verdicts: Sequence[tuple[Pending, Verdict]],
    now: datetime,
    finalize_kw: Mapping[str, Any],
) -> list[str]:
    """Apply one reconciliation round; returns the call_ids finalized now."""
    finalized: list[str] = []
    for p, verdict in verdicts:
        if isinstance(verdict, Follow):
            try:
                boot = verdict.boot_id
                executions.move(conn, p.execution_id, verdict.state, now, cell_boot_id=boot)
            except IllegalTransition:
                pass  # an event moved it further meanwhile
        elif isinstance(verdict, Finish):
            if end_and_finalize(conn, p.execution_id, verdict.ending, now=now, **finalize_kw):
                finalized.append(p.call_id)
    return finalized


def finalized_among(conn: sqlite3.Connection, call_ids: Collection[str]) -> list[str]:
    """Which of these calls are finalized here (to acknowledge them to the cell)."""
    wanted = list(call_ids)
    found: list[str] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = conn.execute(
            f"SELECT call_id FROM executions WHERE state = 'finalized'"
            f" AND call_id IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        found.extend(row[0] for row in rows)
    return found


# --- the stream position ------------------------------------------------------------------


def load_position(conn: sqlite3.Connection) -> tuple[str | None, int]:
    row = conn.execute("SELECT boot_id, last_seq FROM cell_stream WHERE id = 1").fetchone()
    return (row[0], int(row[1])) if row else (None, 0)


def save_position(conn: sqlite3.Connection, boot_id: str, seq: int, now: datetime) -> None:
    conn.execute(
        "UPDATE cell_stream SET boot_id = ?, last_seq = ?, updated_at = ? WHERE id = 1",
        (boot_id, seq, iso(now)),
    )


@dataclass
class Applied:
    finalized: list[str] = field(default_factory=list)
    closed: list[Recording] = field(default_factory=list)


def apply_stream_batch(
    conn: sqlite3.Connection,
    batch: Sequence[CellEvent],
    full: Mapping[str, CellCall | None],
    now: datetime,
    finalize_kw: Mapping[str, Any],
) -> Applied:
    """Apply a batch of the cell's events and persist the position, in one transaction."""
    finalized = ev.apply_batch(conn, batch, full, now, finalize_kw)
    route = recording_tx.Route(finalize_kw["dispatcher_id"], finalize_kw["routing_key"])
    closed = recording_tx.apply_events(conn, batch, now, route)
    last = batch[-1]
    if last.seq > 0:
        save_position(conn, last.boot_id, last.seq, now)
    return Applied(finalized, closed)


# --- the async side ---------------------------------------------------------------------


@dataclass(frozen=True)
class Round:
    checked: int
    finalized: list[str]
    held: int
    to_ack: list[str]  # ended calls the cell still tracks whose executions are finalized


class Reconciler:
    """Asks the cell about pending executions and applies :func:`judge` to each."""

    def __init__(
        self,
        db: Database,
        cell: CellPort,
        *,
        clock: Callable[[], datetime],
        finalize_kw: Mapping[str, Any],
        grace_s: float,
    ) -> None:
        self._db = db
        self._cell = cell
        self._clock = clock
        self._finalize_kw = finalize_kw
        self._grace_s = grace_s

    async def crash_rule(self) -> int:
        """At start: every live execution becomes unknown until the cell is asked."""
        return await self._db.write(mark_unknown, None, self._clock())

    async def cell_unreachable(self, boot: str | None) -> int:
        """The cell does not answer: its live calls are unknown (occupancy kept)."""
        return await self._db.write(mark_unknown, boot, self._clock())

    async def reconcile(self, skip: Collection[str] = (), only_unknown: bool = False) -> Round:
        """One round against the cell's current boot (asked here, never a remembered one:
        a stale boot id would mistake a restarted cell's lost calls for undialled ones)."""
        rows = [
            p
            for p in await self._db.read(pending_rows)
            if p.execution_id not in skip and (not only_unknown or p.state is S.UNKNOWN)
        ]
        boot = await self._cell.boot_id()
        calls = await self._cell.list_calls()
        if await self._cell.boot_id() != boot:
            return Round(0, [], len(rows), [])  # the cell restarted meanwhile: next round
        known = {c.call_id: c for c in calls}
        now = self._clock()
        orphans: dict[str, CellOrphan] = {}

        def verdicts() -> list[tuple[Pending, Verdict]]:
            return [
                (p, judge(p, known.get(p.call_id), orphans.get(p.call_id), boot, now, grace))
                for p in rows
            ]

        grace = self._grace_s
        judged = verdicts()
        if any(isinstance(v, Finish) and p.call_id not in known for p, v in judged):
            orphans.update((o.call_id, o) for o in await self._cell.orphans())
            judged = verdicts()
        finalized = await self._db.write(apply_verdicts, judged, now, self._finalize_kw)
        await self._orphan_files(known, orphans, now)
        ended = [c.call_id for c in calls if c.state == "ended"]
        to_ack = await self._db.read(finalized_among, ended) if ended else []
        held = sum(isinstance(v, Hold) for _, v in judged)
        return Round(len(rows), finalized, held, to_ack)

    async def _orphan_files(
        self, known: Mapping[str, CellCall], orphans: dict[str, CellOrphan], now: datetime
    ) -> None:
        """A call that ended before its cell died may still wait for its file: the
        restarted cell lists it as an orphan, which is uploaded like the call's own."""
        waiting = [c for c in await self._db.read(recording_store.waiting_calls) if c not in known]
        if not waiting:
            return
        if not orphans:
            orphans.update((o.call_id, o) for o in await self._cell.orphans())
        found = {c: orphan_recording(orphans[c]) for c in waiting if c in orphans}
        if found:
            route = recording_tx.Route(
                self._finalize_kw["dispatcher_id"], self._finalize_kw["routing_key"]
            )
            await self._db.write(recording_tx.files_found, found, now, route)
