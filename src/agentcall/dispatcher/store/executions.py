"""Executions with their pinned snapshot; the lifecycle moves through ``move_execution``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from agentcall.dispatcher.domain.admission import Plan
from agentcall.dispatcher.domain.occupancy import OccupancyIndex
from agentcall.dispatcher.domain.states import ExecutionState, move_execution
from agentcall.dispatcher.errors import DispatcherError
from agentcall.dispatcher.store.codec import iso

# The condition of the partial index executions_live (migration 0001): the executions
# that hold occupancy. SQLite uses a partial index only for a query whose WHERE names its
# condition as written, so the queries of live executions say it literally; then they
# read only the live rows, never every execution ever made (test_store checks the plans
# and that this is the complement of holds_occupancy).
_RELEASED = ", ".join(f"'{s.value}'" for s in ExecutionState if not s.holds_occupancy)
_HOLDING = f"state NOT IN ({_RELEASED})"
_OCCUPANCY = (
    "SELECT tenant_id, task_id, trunk_id, count(*) FROM executions"
    f" WHERE {_HOLDING} GROUP BY tenant_id, task_id, trunk_id"
)
LIVE = (ExecutionState.DIALING, ExecutionState.RINGING, ExecutionState.IN_CALL)


class UnknownExecution(DispatcherError):
    """An execution id that the store does not hold was referenced; it is a caller bug."""


@dataclass(frozen=True)
class Execution:
    execution_id: str
    call_id: str
    state: ExecutionState
    plan: Plan
    call_result_event_id: str
    cell_boot_id: str | None
    end: dict[str, Any] | None


_COLUMNS = (
    "execution_id, call_id, state, snapshot_json, call_result_event_id, cell_boot_id, end_json"
)


@lru_cache(maxsize=8192)
def _plan(snapshot: str) -> Plan:
    """The pinned plan of a snapshot (immutable; parsed once per snapshot text: every
    state move reads its execution, and parsing the agent config each time dominated)."""
    return Plan(**json.loads(snapshot))


def _row(row: tuple[Any, ...]) -> Execution:
    execution_id, call_id, state, snapshot, event_id, boot_id, end = row
    return Execution(
        execution_id=execution_id,
        call_id=call_id,
        state=ExecutionState(state),
        plan=_plan(snapshot),
        call_result_event_id=event_id,
        cell_boot_id=boot_id,
        end=json.loads(end) if end else None,
    )


def insert(
    conn: sqlite3.Connection,
    *,
    execution_id: str,
    call_id: str,
    call_result_event_id: str,
    plan: Plan,
    now: datetime,
) -> None:
    at = iso(now)
    conn.execute(
        "INSERT INTO executions (execution_id, command_id, call_id, task_id, tenant_id, trunk_id,"
        " state, snapshot_json, call_result_event_id, accepted_at, updated_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            execution_id,
            plan.command_id,
            call_id,
            plan.task_id,
            plan.tenant_id,
            plan.trunk_id,
            ExecutionState.ACCEPTED.value,
            json.dumps(vars(plan), separators=(",", ":")),  # flat: str/int fields only
            call_result_event_id,
            at,
            at,
        ),
    )


def occupancy(conn: sqlite3.Connection) -> OccupancyIndex:
    """What the executions holding capacity occupy, counted by SQLite: one row per tenant,
    task and trunk, read through the partial index of live executions (its condition is
    written out literally, as SQLite requires to use it), so neither the executions
    waiting to be dialled nor the finished ones cost Python work per admission batch."""
    rows = conn.execute(_OCCUPANCY)
    return OccupancyIndex.from_counts(rows)


def get(conn: sqlite3.Connection, execution_id: str) -> Execution:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM executions WHERE execution_id = ?", (execution_id,)
    ).fetchone()
    if row is None:
        raise UnknownExecution(f"no execution {execution_id}")
    return _row(row)


def by_call_id(conn: sqlite3.Connection, call_id: str) -> Execution | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM executions WHERE call_id = ?", (call_id,)
    ).fetchone()
    return _row(row) if row else None


def in_states(conn: sqlite3.Connection, states: Iterable[ExecutionState]) -> list[Execution]:
    chosen = list(states)
    wanted = [s.value for s in chosen]
    marks = ",".join("?" * len(wanted))
    live = f"{_HOLDING} AND " if all(s.holds_occupancy for s in chosen) else ""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM executions WHERE {live}state IN ({marks}) ORDER BY accepted_at",
        wanted,
    )
    return [_row(row) for row in rows]


_STAMPS = {
    ExecutionState.DIALING: "dial_started_at",
    ExecutionState.ENDED: "ended_at",
    ExecutionState.FINALIZED: "finalized_at",
}


def move(
    conn: sqlite3.Connection,
    execution_id: str,
    target: ExecutionState,
    now: datetime,
    *,
    end: dict[str, Any] | None = None,
    cell_boot_id: str | None = None,
    current: Execution | None = None,
) -> Execution:
    """Move one execution along its lifecycle; illegal moves raise ``IllegalTransition``.

    ``current`` is the row as already read in this transaction (saves reading it again).
    Returns the execution as stored after the move."""
    return move_through(
        conn, execution_id, (target,), now, end=end, cell_boot_id=cell_boot_id, current=current
    )


def move_through(
    conn: sqlite3.Connection,
    execution_id: str,
    path: Sequence[ExecutionState],
    now: datetime,
    *,
    end: dict[str, Any] | None = None,
    cell_boot_id: str | None = None,
    current: Execution | None = None,
) -> Execution:
    """Move along ``path`` (each step checked and stamped) with one row write, e.g.
    ``(ENDED, FINALIZED)`` for a call whose result is stored in the same transaction."""
    if current is None:
        current = get(conn, execution_id)
    elif current.execution_id != execution_id:
        raise UnknownExecution(f"row of {current.execution_id} passed for {execution_id}")
    state = current.state
    for step in path:
        state = move_execution(state, step)
    at = iso(now)
    sets = ["state = ?", "updated_at = ?"]
    values: list[Any] = [state.value, at]
    for stamp in dict.fromkeys(_STAMPS[s] for s in path if s in _STAMPS):
        sets.append(f"{stamp} = COALESCE({stamp}, ?)")
        values.append(at)
    moved = replace(current, state=state)
    if end is not None:
        text = json.dumps(end, separators=(",", ":"), ensure_ascii=False)
        sets.append("end_json = ?")
        values.append(text)
        moved = replace(moved, end=json.loads(text))
    if cell_boot_id is not None:
        sets.append("cell_boot_id = ?")
        values.append(cell_boot_id)
        moved = replace(moved, cell_boot_id=cell_boot_id)
    conn.execute(
        f"UPDATE executions SET {', '.join(sets)} WHERE execution_id = ?", (*values, execution_id)
    )
    return moved


def mark_dialing(
    conn: sqlite3.Connection, execution_ids: Sequence[str], cell_boot_id: str | None, now: datetime
) -> list[Execution]:
    """Move the ``accepted`` ones of ``execution_ids`` to ``dialing`` in one statement
    (stamped like :func:`move`); returns them as stored, in the order given. Others (no
    longer accepted) are left alone."""
    move_execution(ExecutionState.ACCEPTED, ExecutionState.DIALING)  # the move is legal
    at = iso(now)
    marks = ",".join("?" * len(execution_ids))
    rows = conn.execute(
        "UPDATE executions SET state = ?, updated_at = ?,"
        " dial_started_at = COALESCE(dial_started_at, ?),"
        " cell_boot_id = COALESCE(?, cell_boot_id)"
        f" WHERE state = ? AND execution_id IN ({marks}) RETURNING {_COLUMNS}",
        (
            ExecutionState.DIALING.value,
            at,
            at,
            cell_boot_id,
            ExecutionState.ACCEPTED.value,
            *execution_ids,
        ),
    ).fetchall()
    moved = {e.execution_id: e for e in map(_row, rows)}
    return [moved[i] for i in dict.fromkeys(execution_ids) if i in moved]


def state_counts(conn: sqlite3.Connection) -> dict[str, int]:
    result = {state.value: 0 for state in ExecutionState}
    for state, count in conn.execute("SELECT state, count(*) FROM executions GROUP BY state"):
        result[state] = count
    return result


@dataclass(frozen=True)
class Pending:
    """An execution whose call may be live: dialing, ringing, in_call or unknown."""

    execution_id: str
    call_id: str
    state: ExecutionState
    cell_boot_id: str | None
    dial_started_at: datetime | None


def pending_rows(conn: sqlite3.Connection) -> list[Pending]:
    states = [s.value for s in (*LIVE, ExecutionState.UNKNOWN)]
    rows = conn.execute(
        "SELECT execution_id, call_id, state, cell_boot_id, dial_started_at FROM executions"
        f" WHERE {_HOLDING} AND state IN ({','.join('?' * len(states))}) ORDER BY accepted_at",
        states,
    )
    return [
        Pending(eid, cid, ExecutionState(state), boot, datetime.fromisoformat(at) if at else None)
        for eid, cid, state, boot, at in rows
    ]


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


def call_ids(conn: sqlite3.Connection, task_id: str, states: Sequence[str]) -> list[str]:
    """The call ids of the task's executions in ``states``."""
    marks = ",".join("?" * len(states))
    rows = conn.execute(
        f"SELECT call_id FROM executions WHERE task_id = ? AND state IN ({marks})",
        (task_id, *states),
    )
    return [row[0] for row in rows]
