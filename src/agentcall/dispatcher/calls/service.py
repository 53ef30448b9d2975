"""Execution supervisor: originate accepted executions, follow the cell, finalize once.

* **Dialer** — accepted executions are persisted as ``dialing`` (with the cell boot id)
  *before* the originate is sent, so a crash can never lead to a second dial: after a
  restart anything between "originate sent" and "ended known" is ``unknown`` and is only
  resolved by asking the cell (ARCHITECTURE crash rule). A refused originate ends the
  execution as ``failed``; an unanswered one makes it ``unknown`` (occupancy kept). A
  call id the cell dialled before (the call ids are derived from the command, so a command
  admitted again after the D's state was lost asks for the same one) is never dialled
  again: the cell's call is adopted (:func:`.verdicts.adopt`).
* **Events** — the cell's ordered stream is applied in batches, one transaction each,
  together with the stream position ``(boot_id, seq)``, so a restarted D resumes after the
  last applied event of the same boot. ``call.ended`` ends the execution (occupancy
  released) and finalizes it (one call.result, fixed event_id) — or, when a recording is
  expected, opens it for :mod:`agentcall.dispatcher.recording`, which finalizes it once closed.
  Finished calls are acknowledged to the cell off the stream's path, those finalized
  meanwhile in one request. Replays after a reconnect are no-ops.
* **Reconcile** (:mod:`.recovery`) — at start, on every new cell boot id
  and while executions are unknown, pending executions are matched against the cell's
  calls; a call the cell does not know is finalized once as ``failed`` with an explicit
  reason (a recording it left is still uploaded), never redialled. While the cell does not
  answer, its live calls are ``unknown`` (occupancy kept).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from agentcall.dispatcher.calls import events as ev
from agentcall.dispatcher.calls import recovery, transaction
from agentcall.dispatcher.calls.plan import cell_plan
from agentcall.dispatcher.cell.port import (
    BatchingCell,
    CallIdTaken,
    CellCall,
    CellPort,
    CellPortError,
    CellRejected,
)
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.finalize.result import Finalizer, failed_ending
from agentcall.dispatcher.logs import log
from agentcall.dispatcher.recording.service import RecordingService
from agentcall.dispatcher.store import cell_stream, executions
from agentcall.dispatcher.store.db import Database
from agentcall.dispatcher.store.executions import Execution
from agentcall.dispatcher.telemetry.port import NO_TELEMETRY, Telemetry
from agentcall.dispatcher.telemetry.tracing import NO_TRACING, Tracing

LOG = logging.getLogger("dispatcher.calls")
LIVE = (S.DIALING, S.RINGING, S.IN_CALL)
UNKNOWN_GRACE_S = 5.0
# Executions marked ``dialing`` ahead of their originate: after a crash (or a cell outage
# met by rounds already in flight) each of them is unknown and, if the cell never got it,
# ends failed (never redialled) — keep DIAL_BATCH * DIAL_ROUNDS small.
DIAL_BATCH = 32
DIAL_ROUNDS = 1


@dataclass(frozen=True)
class CallsStatus:
    cell_boot_id: str | None
    counts: dict[str, int]
    last_error: str | None
    cell_reachable: bool = False


class CallSupervisor:
    def __init__(
        self,
        db: Database,
        cell: CellPort,
        *,
        dispatcher_id: str,
        routing_key: str,
        clock: Callable[[], datetime],
        on_outbox: Callable[[], None],
        concurrency: int = 128,
        retry_s: float = 1.0,
        recordings: RecordingService | None = None,
        unknown_grace_s: float = UNKNOWN_GRACE_S,
        watch_s: float = 1.0,
        telemetry: Telemetry = NO_TELEMETRY,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        self._db = db
        self._telemetry = telemetry
        self._tracing = tracing
        self._cell = cell
        opener = None if recordings is None else recordings.opener
        self._finalizer = Finalizer(dispatcher_id, routing_key, opener)
        self._clock = clock
        self._on_outbox = on_outbox
        self._limit = asyncio.Semaphore(concurrency)
        self._retry = retry_s
        self._dial: asyncio.Queue[str] = asyncio.Queue()
        self._to_ack: asyncio.Queue[str] = asyncio.Queue()
        self._inflight: set[str] = set()
        self._recordings = recordings
        self._recovery = recovery.Reconciler(
            db, cell, clock=clock, finalizer=self._finalizer, grace_s=unknown_grace_s
        )
        self._grace_s = unknown_grace_s
        self._watch_s = watch_s
        self._cell_down = False
        self._dial_paused = False
        self.boot_id: str | None = None
        self.counts: Counter[str] = Counter()
        self.last_error: str | None = None

    def status(self) -> CallsStatus:
        reachable = self.boot_id is not None and not self._cell_down
        return CallsStatus(self.boot_id, dict(self.counts), self.last_error, reachable)

    def submit(self, execution_ids: list[str]) -> None:
        for execution_id in execution_ids:
            self._dial.put_nowait(execution_id)

    async def run(self) -> None:
        await self._recover()
        async with asyncio.TaskGroup() as group:
            group.create_task(self._dialer(), name="calls.dialer")
            group.create_task(self._follow(), name="calls.events")
            group.create_task(self._acker(), name="calls.acks")
            group.create_task(self._sweep(), name="calls.unknown_sweep")
            group.create_task(self._watch(), name="calls.cell_watch")
            if self._recordings is not None:
                group.create_task(self._recordings.run(), name="calls.recordings")

    # --- start-up -----------------------------------------------------------------
    async def _recover(self) -> None:
        """Crash rule: live executions become unknown; never-sent ones are dialled."""
        unknown = await self._recovery.crash_rule()
        pending = await self._db.read(executions.in_states, (S.ACCEPTED,))
        self.submit([e.execution_id for e in pending])
        if unknown or pending:
            log(LOG, logging.INFO, "calls.recovered", unknown=unknown, to_dial=len(pending))

    # --- dialling -----------------------------------------------------------------
    async def _dialer(self) -> None:
        """Rounds of up to DIAL_BATCH executions: marked ``dialing`` in one transaction,
        then sent; up to DIAL_ROUNDS rounds are in flight, so marking the next round
        overlaps the cell's answer to the previous one."""
        rounds = asyncio.Semaphore(DIAL_ROUNDS)
        async with asyncio.TaskGroup() as group:
            while True:
                await rounds.acquire()
                try:
                    marked = await self._next_round()
                except BaseException:
                    rounds.release()
                    raise
                group.create_task(self._send_round(marked, rounds), name="calls.dial_round")

    async def _next_round(self) -> list[Execution]:
        batch = [await self._dial.get()]
        while not self._dial.empty() and len(batch) < DIAL_BATCH:
            batch.append(self._dial.get_nowait())
        boot = await self._dial_boot()
        # the still accepted ones, now dialing (one statement)
        marked: list[Execution] = await self._db.write_first(
            executions.mark_dialing, batch, boot, self._clock()
        )
        self._inflight.update(e.execution_id for e in marked)
        return marked

    async def _send_round(self, marked: list[Execution], rounds: asyncio.Semaphore) -> None:
        self._tracing.originating(e.execution_id for e in marked)
        try:
            if isinstance(self._cell, BatchingCell):
                await self._originate_batch(self._cell, marked)
            else:
                await asyncio.gather(*(self._originate(e) for e in marked))
        finally:
            self._inflight.difference_update(e.execution_id for e in marked)
            rounds.release()

    async def _dial_boot(self) -> str:
        """The boot to dial on. After an unanswered originate, wait until the cell answers
        again: nothing is marked dialing meanwhile, so an outage of the cell does not turn
        the queued calls into unknown ones (which would end failed, never redialled)."""
        while True:
            if self.boot_id is not None and not self._dial_paused:
                return self.boot_id
            try:
                boot = await self._cell.boot_id()
            except CellPortError as exc:
                self.last_error = str(exc)
                await asyncio.sleep(self._retry)
                continue
            self.boot_id = self.boot_id or boot
            self._dial_paused = False
            return boot

    async def _originate(self, execution: Execution) -> None:
        body = cell_plan(execution.execution_id, execution.call_id, execution.plan)
        async with self._limit:
            try:
                answer: CellCall | CellPortError = await self._cell.originate(body)
            except CellPortError as exc:
                answer = exc
            await self._answered(execution, answer)

    async def _originate_batch(self, cell: BatchingCell, marked: list[Execution]) -> None:
        """One request for the batch; each answer is settled as a single originate's."""
        if not marked:
            return
        bodies = [cell_plan(e.execution_id, e.call_id, e.plan) for e in marked]
        async with self._limit:
            answers = await cell.originate_many(bodies)
        for execution, answer in zip(marked, answers, strict=True):
            await self._answered(execution, answer)

    async def _answered(self, execution: Execution, answer: CellCall | CellPortError) -> None:
        self._telemetry.originated(execution.execution_id, isinstance(answer, CellCall))
        self._tracing.originated(execution.execution_id, isinstance(answer, CellCall))
        if isinstance(answer, CellCall):
            self.counts["originated"] += 1
            if answer.state == "ended":  # the cell's call of an earlier admission
                await self._adopt(execution, answer)
        else:
            await self._settle(execution, answer)

    async def _settle(self, execution: Execution, exc: CellPortError) -> None:
        """A refused originate ends failed; an unanswered one makes the execution unknown;
        a call id the cell dialled before is adopted (never dialled again)."""
        if isinstance(exc, CallIdTaken):
            self.counts["originate_taken"] += 1
            await self._adopt(execution, None)
            return
        if isinstance(exc, CellRejected):
            self.counts["originate_refused"] += 1
            await self._fail(execution, f"cell_{exc.code}")
            return
        self.counts["originate_unknown"] += 1
        self.last_error = str(exc)
        self._dial_paused = True  # no more dialing until the cell answers
        await self._db.write(executions.move, execution.execution_id, S.UNKNOWN, self._clock())

    async def _adopt(self, execution: Execution, call: CellCall | None) -> None:
        """The cell dialled this call id before (the command was admitted again after the
        D's state was lost): its call is this execution's — followed, or finalized with
        its outcome. Unknown (occupancy kept) until the cell is asked; if it cannot be
        asked now, the unknown sweep reconciles it later."""
        await self._db.write(executions.move, execution.execution_id, S.UNKNOWN, self._clock())
        try:
            if call is None:
                call = await self._cell.get_call(execution.call_id)
            finalized = await self._recovery.adopt({execution.call_id: call})
        except CellPortError as exc:
            self.last_error = str(exc)
            return
        self.counts["adopted"] += 1
        if finalized:
            self.counts["finalized"] += len(finalized)
            self._on_outbox()
            if call is not None:
                await self._ack_all(finalized)

    async def _fail(self, execution: Execution, reason: str) -> None:
        now = self._clock()
        ending = failed_ending(now, now, reason)
        await self._db.write(self._finalizer.end, execution.execution_id, ending, now)
        self.counts["finalized"] += 1
        self._on_outbox()

    # --- following the cell -----------------------------------------------------------
    async def _follow(self) -> None:
        while True:
            try:
                boot = await self._cell.boot_id()
                self.boot_id = boot
                await self._reconcile()
                await self._consume()
            except CellPortError as exc:
                self.last_error = str(exc)
                log(LOG, logging.WARNING, "calls.cell_unreachable", error=str(exc))
                await asyncio.sleep(self._retry)

    async def _consume(self) -> None:
        """Apply the stream after the persisted position of this boot until it restarts."""
        boot = self.boot_id
        stored_boot, seq = await self._db.read(cell_stream.load_position)
        after = seq if stored_boot == boot else 0
        async for batch in ev.EventBatcher(self._cell, after, boot_id=boot).batches():
            restart = next((i for i, e in enumerate(batch) if e.type == ev.RESTARTED), None)
            await self._apply(batch if restart is None else batch[:restart])
            if restart is not None:
                log(LOG, logging.WARNING, "calls.cell_restarted", boot_id=batch[restart].boot_id)
                return

    async def _apply(self, batch: list[ev.CellEvent]) -> None:
        if not batch:
            return
        endings = await ev.endings(self._cell, batch)
        now = self._clock()
        applied = await self._db.write(
            transaction.apply_stream_batch, batch, endings, now, self._finalizer
        )
        finalized = applied.finalized
        if self._tracing.on:
            ended = (e.call_id for e in batch if e.type == ev.ENDED)
            self._tracing.calls_ended(ended, set(finalized))
        self.counts["finalized"] += len(finalized)
        if finalized:
            self._on_outbox()
            for call_id in finalized:
                self._to_ack.put_nowait(call_id)
        if self._recordings is not None:
            await self._recordings.after_close(applied.closed)
            self._recordings.wake()

    async def _acker(self) -> None:
        """Acknowledge the calls the event stream finalized (their results are committed):
        what has been finalized meanwhile goes in one request, one request at a time, so
        the stream never waits for the cell's answer. An ack lost to a stop is sent by the
        reconciliation of the next start (the cell still tracks the call)."""
        while True:
            call_ids = [await self._to_ack.get()]
            while not self._to_ack.empty():
                call_ids.append(self._to_ack.get_nowait())
            await self._ack_all(call_ids)

    async def _ack_all(self, call_ids: list[str]) -> None:
        if isinstance(self._cell, BatchingCell):
            if call_ids:
                errors = await self._cell.ack_many(call_ids)
                for call_id, exc in zip(call_ids, errors, strict=True):
                    if exc is not None:
                        log(LOG, logging.DEBUG, "calls.ack_failed", call_id=call_id, error=str(exc))
            return
        await asyncio.gather(*(self._ack(call_id) for call_id in call_ids))

    async def _ack(self, call_id: str) -> None:
        try:
            await self._cell.ack(call_id)
        except CellPortError as exc:
            log(LOG, logging.DEBUG, "calls.ack_failed", call_id=call_id, error=str(exc))

    async def _sweep(self) -> None:
        """Resolve unknown executions (unanswered originate, cell away) once decidable."""
        while True:
            await asyncio.sleep(self._grace_s)
            rows = await self._db.read(executions.pending_rows)
            if self.boot_id is not None and any(p.state is S.UNKNOWN for p in rows):
                try:
                    await self._reconcile(only_unknown=True)
                except CellPortError as exc:
                    self.last_error = str(exc)

    async def _watch(self) -> None:
        """While the cell does not answer, its live calls are unknown (occupancy kept)."""
        while True:
            await asyncio.sleep(self._watch_s)
            try:
                boot = await self._cell.boot_id()
            except CellPortError as exc:
                if not self._cell_down:
                    self._cell_down = True
                    self.last_error = str(exc)
                    moved = await self._recovery.cell_unreachable(self.boot_id)
                    log(LOG, logging.WARNING, "calls.cell_lost", unknown=moved, error=str(exc))
                continue
            if self._cell_down and boot == self.boot_id:
                self._cell_down = False
                try:
                    await self._reconcile()
                except CellPortError as exc:
                    self.last_error = str(exc)
            elif boot != self.boot_id:
                self._cell_down = False  # the event stream reports the restart

    async def _reconcile(self, only_unknown: bool = False) -> None:
        result = await self._recovery.reconcile(self._inflight, only_unknown)
        if not result.checked and not result.to_ack:
            return
        self.counts["reconciled"] += result.checked
        self.counts["finalized"] += len(result.finalized)
        if result.finalized:
            self._on_outbox()
        acks = set(result.finalized) | set(result.to_ack)
        await self._ack_all(sorted(acks))
        if self._recordings is not None:
            self._recordings.wake()
        log(
            LOG,
            logging.INFO,
            "calls.reconciled",
            checked=result.checked,
            finalized=len(result.finalized),
            held=result.held,
            acked=len(acks),
        )
