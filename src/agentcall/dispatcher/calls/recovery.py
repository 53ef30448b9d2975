"""Reconciliation with the cell after a D restart and after a cell restart (crash rule).

Anything between "originate sent" and "call ended known" is ``unknown`` until the cell is
asked; :class:`Reconciler` asks it about every pending execution, judges each answer
(:func:`.verdicts.judge`) and applies the round in one transaction. The event stream
resumes after the persisted ``(boot_id, seq)`` position (:mod:`.transaction`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

from agentcall.dispatcher.calls import transaction
from agentcall.dispatcher.calls.verdicts import (
    Finish,
    Hold,
    Verdict,
    adopt,
    judge,
    orphan_recording,
)
from agentcall.dispatcher.cell.port import CellCall, CellOrphan, CellPort
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.finalize.result import Finalizer
from agentcall.dispatcher.recording import transaction as recording_tx
from agentcall.dispatcher.store import executions
from agentcall.dispatcher.store import recordings as recording_store
from agentcall.dispatcher.store.db import Database
from agentcall.dispatcher.store.executions import Pending


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
        finalizer: Finalizer,
        grace_s: float,
    ) -> None:
        self._db = db
        self._cell = cell
        self._clock = clock
        self._finalizer = finalizer
        self._grace_s = grace_s

    async def crash_rule(self) -> int:
        """At start: every live execution becomes unknown until the cell is asked."""
        return await self._db.write(transaction.mark_unknown, None, self._clock())

    async def cell_unreachable(self, boot: str | None) -> int:
        """The cell does not answer: its live calls are unknown (occupancy kept)."""
        return await self._db.write(transaction.mark_unknown, boot, self._clock())

    async def reconcile(self, skip: Collection[str] = (), only_unknown: bool = False) -> Round:
        """One round against the cell's current boot (asked here, never a remembered one:
        a stale boot id would mistake a restarted cell's lost calls for undialled ones)."""
        rows = [
            p
            for p in await self._db.read(executions.pending_rows)
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
        finalized = await self._db.write(transaction.apply_verdicts, judged, now, self._finalizer)
        await self._orphan_files(known, orphans, now)
        ended = [c.call_id for c in calls if c.state == "ended"]
        to_ack = await self._db.read(executions.finalized_among, ended) if ended else []
        held = sum(isinstance(v, Hold) for _, v in judged)
        return Round(len(rows), finalized, held, to_ack)

    async def adopt(self, answers: Mapping[str, CellCall | None]) -> list[str]:
        """Executions whose call ids the cell dialled before (call_id → the cell's call
        now, None: it holds none): apply :func:`adopt` to each; returns the call_ids
        finalized now."""
        rows = [p for p in await self._db.read(executions.pending_rows) if p.call_id in answers]
        now = self._clock()
        judged = [(p, adopt(p, answers[p.call_id], now)) for p in rows]
        finalized: list[str] = await self._db.write(
            transaction.apply_verdicts, judged, now, self._finalizer
        )
        return finalized

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
            route = recording_tx.Route(self._finalizer.dispatcher_id, self._finalizer.routing_key)
            await self._db.write(recording_tx.files_found, found, now, route)
