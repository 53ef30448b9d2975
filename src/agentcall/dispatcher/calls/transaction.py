"""The calls' changes on the database thread, one transaction each; all idempotent.

* :func:`apply_batch` — a batch of the cell's events applied to the executions (a
  replayed event changes nothing); :func:`apply_stream_batch` adds the recording events
  and the stream position ``(boot_id, seq)`` in the same transaction;
* :func:`mark_unknown` — the crash rule: live executions become ``unknown``;
* :func:`apply_verdicts` — one reconciliation round (:mod:`.verdicts`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agentcall.dispatcher.calls.events import ending_from_event
from agentcall.dispatcher.calls.verdicts import Finish, Follow, Verdict
from agentcall.dispatcher.cell.port import CallEnded, CellCall, CellEvent
from agentcall.dispatcher.domain.recording import Recording
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.domain.states import IllegalTransition
from agentcall.dispatcher.finalize.result import Finalizer
from agentcall.dispatcher.recording import transaction as recording_tx
from agentcall.dispatcher.store import cell_stream, executions
from agentcall.dispatcher.store.executions import LIVE, Execution, Pending

_MOVES = {"call.ringing": S.RINGING, "call.answered": S.IN_CALL, "call.dialing": S.DIALING}


def _advance(conn: sqlite3.Connection, execution: Execution, target: S, now: datetime) -> None:
    try:
        executions.move(conn, execution.execution_id, target, now, current=execution)
    except IllegalTransition:
        pass  # a replayed or late event: the execution is already further along


def apply_batch(
    conn: sqlite3.Connection,
    batch: Sequence[CellEvent],
    full: Mapping[str, CellCall | None],
    now: datetime,
    finalizer: Finalizer,
) -> list[str]:
    """Apply events in order; returns the call_ids finalized by this batch.

    Coalesced: a progress event (dialing/ringing/answered) of a call whose ``call.ended``
    is in the same batch is skipped — the end supersedes it within this transaction —
    and one that would not change the state is not written."""
    finalized: list[str] = []
    ending_calls = {e.call_id for e in batch if e.type == "call.ended"}
    for event in batch:
        if event.type in _MOVES and event.call_id in ending_calls:
            continue
        execution = executions.by_call_id(conn, event.call_id)
        if execution is None or execution.state is S.FINALIZED:
            continue
        if event.type in _MOVES:
            if execution.state is not _MOVES[event.type]:
                _advance(conn, execution, _MOVES[event.type], now)
        elif isinstance(event.detail, CallEnded):
            record = full.get(event.call_id)
            transcript = record.transcript if record else ()
            ending = ending_from_event(event.detail, transcript, now)
            finalized_now = finalizer.end(conn, execution.execution_id, ending, now, execution)
            if finalized_now:
                finalized.append(event.call_id)
    return finalized


def mark_unknown(conn: sqlite3.Connection, boot: str | None, now: datetime) -> int:
    """Crash rule: live executions (of ``boot``, or all when None) become unknown."""
    moved = 0
    for p in executions.pending_rows(conn):
        if p.state in LIVE and (boot is None or p.cell_boot_id in (boot, None)):
            executions.move(conn, p.execution_id, S.UNKNOWN, now)
            moved += 1
    return moved


def apply_verdicts(
    conn: sqlite3.Connection,
    verdicts: Sequence[tuple[Pending, Verdict]],
    now: datetime,
    finalizer: Finalizer,
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
            if finalizer.end(conn, p.execution_id, verdict.ending, now):
                finalized.append(p.call_id)
    return finalized


# --- the stream position ------------------------------------------------------------------


@dataclass
class Applied:
    finalized: list[str] = field(default_factory=list)
    closed: list[Recording] = field(default_factory=list)


def apply_stream_batch(
    conn: sqlite3.Connection,
    batch: Sequence[CellEvent],
    full: Mapping[str, CellCall | None],
    now: datetime,
    finalizer: Finalizer,
) -> Applied:
    """Apply a batch of the cell's events and persist the position, in one transaction."""
    finalized = apply_batch(conn, batch, full, now, finalizer)
    route = recording_tx.Route(finalizer.dispatcher_id, finalizer.routing_key)
    closed = recording_tx.apply_events(conn, batch, now, route)
    last = batch[-1]
    if last.seq > 0:
        cell_stream.save_position(conn, last.boot_id, last.seq, now)
    return Applied(finalized, closed)
