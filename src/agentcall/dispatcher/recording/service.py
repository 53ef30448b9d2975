"""The recording loop: authorize, hand the PUT to the cell, verify, close by the deadline.

Each round reads the open recordings and runs :func:`.decide.next_step` for each:

* **authorize** — presign a PUT of the fixed object key (D-REC-1: ``authorization_s``,
  never past the deadline), persist ``authorized`` *before* the URL leaves the process,
  then ask the cell to PUT once. A grant is issued once; a new one only answers the
  cell's explicit request (its grant expired before its PUT began: ``renewal_requested``
  in its answer or ``call.upload`` event), for the same upload_id/object_key, before the
  deadline (D-NOTE-7). The D never re-issues one on its own, also not after a restart;
  a grant not answered yet (the cell was away, or the D restarted) is handed over again
  as it is — it is kept with the recording until the cell answers about it.
* **verify** — HEAD + SHA-256 of the object against the cell's report (D-REC-2); a
  mismatch closes ``checksum_mismatch``.
* **close** — at ``ended_at`` + window every open recording closes (the sweeper), after
  one last look at the bucket.

Closing stores the call's single call.result (same transaction); then the cell is told it
may forget the call, and a recording the D no longer needs is deleted from its disk.
Everything is derived from the ``recordings`` table, so a restart resumes where it was.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from agentcall.dispatcher.cell.port import CellPort, CellPortError, CellRejected
from agentcall.dispatcher.domain import recording as model
from agentcall.dispatcher.domain.recording import (
    ErrorCode,
    Recording,
    RecordingState,
    UploadReport,
    UploadStatus,
)
from agentcall.dispatcher.logs import log
from agentcall.dispatcher.mq.names import result_routing_key
from agentcall.dispatcher.recording import transaction as lifecycle
from agentcall.dispatcher.recording.decide import Step, authorization_until, expires_in_s, next_step
from agentcall.dispatcher.recording.storage import (
    AuthorizationFailed,
    ObjectStore,
    S3Store,
    StorageConfig,
    StorageUnavailable,
)
from agentcall.dispatcher.recording.transaction import Opener, Route
from agentcall.dispatcher.settings import Settings
from agentcall.dispatcher.store import recordings as store
from agentcall.dispatcher.store.db import Database
from agentcall.dispatcher.telemetry.tracing import NO_TRACING, Tracing

LOG = logging.getLogger("dispatcher.recording")
S = RecordingState
_PROBED = (S.AUTHORIZED, S.PUT_UNKNOWN, S.PUT_DONE)


class _Writes:
    """Coalesces recording transitions into one transaction per batch: every commit of
    the state database is fsynced, so one per change would cap the upload throughput."""

    def __init__(self, db: Database, route: Route, clock: Callable[[], datetime]) -> None:
        self._db, self._route, self._clock = db, route, clock
        self._pending: list[tuple[str, lifecycle.Change, asyncio.Future[Recording | None]]] = []
        self._wake = asyncio.Event()

    async def apply(self, execution_id: str, change: lifecycle.Change) -> Recording | None:
        future: asyncio.Future[Recording | None] = asyncio.get_running_loop().create_future()
        self._pending.append((execution_id, change, future))
        self._wake.set()
        return await future

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            if not batch:
                continue
            changes = [(execution_id, change) for execution_id, change, _ in batch]
            try:
                results = await self._db.write(
                    lifecycle.transition_many, changes, self._clock(), self._route
                )
            except BaseException as exc:
                for _, _, future in batch:
                    future.set_exception(exc)
                raise
            for (_, _, future), result in zip(batch, results, strict=True):
                future.set_result(result)


@dataclass(frozen=True)
class RecordingsStatus:
    bucket: str
    counts: dict[str, int]


class RecordingService:
    def __init__(
        self,
        db: Database,
        cell: CellPort,
        storage: ObjectStore,
        *,
        route: Route,
        key_prefix: str,
        authorization_s: float,
        deadline_s: float,
        sweep_s: float,
        clock: Callable[[], datetime],
        on_outbox: Callable[[], None],
        concurrency: int = 16,
        retry_s: float = 1.0,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        self._db = db
        self._tracing = tracing
        self._cell = cell
        self._storage = storage
        self._route = route
        self.opener = Opener(storage.bucket, key_prefix, deadline_s)
        self._authorization_s = authorization_s
        self._sweep_s = sweep_s
        self._clock = clock
        self._on_outbox = on_outbox
        self._limit = asyncio.Semaphore(concurrency)
        self._retry_s = retry_s
        self._wake = asyncio.Event()
        self._busy: set[str] = set()
        self._closing: set[str] = set()
        self._not_before: dict[str, float] = {}
        self._writes = _Writes(db, route, clock)
        self.counts: Counter[str] = Counter()
        self.last_error: str | None = None

    @property
    def bucket(self) -> str:
        return self._storage.bucket

    def wake(self) -> None:
        self._wake.set()

    def status(self) -> RecordingsStatus:
        return RecordingsStatus(self.bucket, dict(self.counts))

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._writes.run(), name="recording.writes")
            while True:
                self._wake.clear()
                for rec, step in await self._due():
                    (self._closing if step is Step.CLOSE else self._busy).add(rec.call_id)
                    group.create_task(self._act(rec, step), name=f"recording.{step}")
                try:
                    await asyncio.wait_for(self._wake.wait(), self._sweep_s)
                except TimeoutError:
                    pass

    async def _due(self) -> list[tuple[Recording, Step]]:
        rows = await self._db.read(store.open_rows)
        now, mono = self._clock(), time.monotonic()
        due: list[tuple[Recording, Step]] = []
        for rec in rows:
            if self._not_before.get(rec.call_id, 0.0) > mono or rec.call_id in self._closing:
                continue
            held = rec.grant_url is not None
            step = next_step(rec, now, busy=rec.call_id in self._busy, holds_grant=held)
            if step in (Step.AUTHORIZE, Step.HAND_OVER, Step.VERIFY, Step.CLOSE):
                due.append((rec, step))
        return due

    async def _act(self, rec: Recording, step: Step) -> None:
        try:
            async with self._limit:
                if step is Step.AUTHORIZE:
                    await self._authorize(rec)
                elif step is Step.HAND_OVER and rec.grant_url is not None:
                    await self._hand_over(rec, rec.grant_url)
                elif step is Step.VERIFY:
                    await self._verify(rec)
                else:
                    await self._close(rec)
            self._not_before.pop(rec.call_id, None)
        except (CellPortError, StorageUnavailable) as exc:
            self.last_error = str(exc)
            self._not_before[rec.call_id] = time.monotonic() + self._retry_s
            log(LOG, logging.WARNING, "recording.retry", call_id=rec.call_id, error=str(exc))
        finally:
            (self._closing if step is Step.CLOSE else self._busy).discard(rec.call_id)

    async def _change(self, rec: Recording, change: lifecycle.Change) -> Recording | None:
        new = await self._writes.apply(rec.execution_id, change)
        if new is not None and new.state.closed and not rec.state.closed:
            await self.after_close([new])
        return new

    # --- steps ------------------------------------------------------------------------
    async def _authorize(self, rec: Recording) -> None:
        now = self._clock()
        until = authorization_until(now, rec.deadline_at, self._authorization_s)
        try:
            url = await self._storage.presign_put(rec.object_key, expires_in_s(now, until))
        except AuthorizationFailed as exc:
            why, code = str(exc), ErrorCode.AUTHORIZATION_FAILED
            await self._change(rec, lambda r: model.close(r, code, why))
            return
        held = await self._change(rec, lambda r: model.authorized(r, until, url))
        if held is None or held.state is not S.AUTHORIZED or held.authorized_until != until:
            return  # the recording moved on meanwhile (an event): that state decides
        self.counts["authorized" if rec.authorizations == 0 else "renewed_on_request"] += 1
        await self._hand_over(held, url)

    async def _hand_over(self, held: Recording, url: str) -> None:
        """Give the cell the grant (once it answered, the grant is no longer held here)."""
        report = await self._request_put(held, url)
        if report.status is UploadStatus.MISSING:
            # No file at the cell: an earlier request may have uploaded it (and the cell
            # then deleted its copy) before a restart of the D. The bucket decides.
            probe = await self._storage.probe(held.object_key)
            if isinstance(probe, model.ObjectFacts):
                await self._change(held, lambda r: model.verified(r, probe))
                return
        after = await self._change(held, lambda r: model.upload_reported(r, report))
        if after is not None and after.state is S.PUT_DONE:
            await self._verify(after)

    async def _request_put(self, rec: Recording, url: str) -> UploadReport:
        try:
            answer = await self._cell.upload_recording(rec.call_id, rec.upload_id, url, {})
        except CellRejected as exc:
            return lifecycle.report_of_refusal(exc.code, str(exc))
        self.counts[f"put_{answer.status}"] += 1
        return lifecycle.report_of(
            answer.status,
            answer.error_code,
            answer.expires_at,
            answer.message,
            renewal_requested=answer.renewal_requested,
        )

    async def _verify(self, rec: Recording) -> None:
        probe = await self._storage.probe(rec.object_key)
        self.counts["verified"] += 1
        await self._change(rec, lambda r: model.verified(r, probe))

    async def _close(self, rec: Recording) -> None:
        probe: model.Probe = None
        if rec.state in _PROBED:
            try:
                probe = await self._storage.probe(rec.object_key)
            except StorageUnavailable as exc:
                self.last_error = str(exc)
        await self._change(rec, lambda r: model.deadline_passed(r, probe))

    # --- after a recording closed -------------------------------------------------------
    async def after_close(self, closed: Iterable[Recording]) -> None:
        """The call.result is stored: wake the relay, let the cell forget the call."""
        recs = list(closed)
        if not recs:
            return
        self._on_outbox()
        for rec in recs:
            self.counts[f"closed_{rec.error_code or rec.state}"] += 1
            self._tracing.recording_closed(rec.execution_id, rec.state.value)
            log(
                LOG,
                logging.INFO,
                "recording.closed",
                call_id=rec.call_id,
                state=rec.state.value,
                error_code=rec.error_code.value if rec.error_code else None,
            )
        await asyncio.gather(*(self._release(rec) for rec in recs))

    async def _release(self, rec: Recording) -> None:
        try:
            await self._cell.ack(rec.call_id)
            if rec.source is model.Source.ORPHAN or rec.state is S.UNAVAILABLE:
                await self._cell.delete_orphan(rec.call_id)
        except CellPortError as exc:  # the next reconciliation acknowledges it again
            log(LOG, logging.DEBUG, "recording.release_failed", call_id=rec.call_id, error=str(exc))


def from_settings(
    settings: Settings,
    db: Database,
    cell: CellPort,
    *,
    clock: Callable[[], datetime],
    on_outbox: Callable[[], None],
    tracing: Tracing = NO_TRACING,
) -> RecordingService | None:
    """The recording loop of a D, or None when no bucket is configured (DISPATCHER_S3_*)."""
    config = StorageConfig.from_settings(settings)
    if config is None:
        return None
    did = settings.dispatcher_id
    return RecordingService(
        db,
        cell,
        S3Store(config),
        route=Route(did, result_routing_key(did)),
        key_prefix=config.key_prefix,
        authorization_s=settings.upload_authorization_s,
        deadline_s=settings.recording_deadline_s,
        sweep_s=settings.recording_sweep_s,
        clock=clock,
        on_outbox=on_outbox,
        tracing=tracing,
    )
