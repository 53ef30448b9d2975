"""The cell service: calls in memory, the event log, the originate log and recordings.

Everything the HTTP API does goes through :class:`CellService`; the driver (sim or
sip) only places calls. Guarantees kept here:

- a call_id is dialled at most once, ever: the originate log is fsynced before the
  driver starts, and it is read back at start-up (``already_dialled`` afterwards);
- the same call_id with the same plan returns the existing call (idempotent);
- ended calls are kept until acknowledged; acknowledging prunes their events;
- a recording is PUT at most once (see ``agentcall.cell.runtime.uploads``).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import httpx

from agentcall.cell import __version__
from agentcall.cell.agent.providers import ProviderRegistry
from agentcall.cell.calls.driver import CallDriver
from agentcall.cell.calls.plan import CallPlan, UploadTarget, parse_plan
from agentcall.cell.calls.record import CallRecord
from agentcall.cell.domain.errors import (
    CallAlreadyDialledError,
    CallIdConflictError,
    CallNotEndedError,
    CallNotFoundError,
    CellBusyError,
    CellConfigError,
    CellConflictError,
    CellDrainingError,
    CellError,
    StateLostError,
    wire_error,
)
from agentcall.cell.domain.events import CellEvent, EventLog, iso
from agentcall.cell.domain.model import CallState, EventType, ReasonCode
from agentcall.cell.recording.store import RecordingMeta, RecordingStore, UploadStatus
from agentcall.cell.runtime.live import LiveCall
from agentcall.cell.runtime.uploads import EXPIRY_SKEW_S, UploadResult, upload_recording
from agentcall.cell.state.approved import ApprovedConfig
from agentcall.cell.state.originate_log import FILE_NAME, OriginateLog, may_create, used_before
from agentcall.cell.telemetry.metrics import CellMetrics

log = logging.getLogger("cell.service")
SETTLED = (UploadStatus.UPLOADED, UploadStatus.FAILED)
WATCH_S = 1.0  # how often the originate log's identity is checked besides every write


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class CellConfig:
    data_dir: Path
    mode: str
    time_scale: float = 1.0
    max_calls: int = 1000
    shutdown_grace_s: float = 5.0
    upload_timeout_s: float = 120.0
    upload_expiry_skew_s: float = EXPIRY_SKEW_S  # a URL this long past expiry is not tried
    cell_id: str | None = None  # reported in /v1/info; the D compares it (D-NOTE-9)
    first_start: bool = False  # a missing originate log may be created in a used data dir


class CellService:
    def __init__(
        self,
        config: CellConfig,
        driver: CallDriver,
        providers: ProviderRegistry,
        now: Callable[[], datetime] = utc_now,
        on_state_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self.config = config
        self.driver = driver
        self.providers = providers
        self.now = now
        self.boot_id = uuid.uuid4().hex
        self.started_at = now()
        self.metrics = CellMetrics()
        self.events = EventLog(self.boot_id, on_append=self._on_event)
        self.recordings = RecordingStore(config.data_dir / "recordings", self.boot_id)
        self.approved = ApprovedConfig(config.data_dir)
        self._calls: dict[str, CallRecord] = {}
        self._live: dict[str, LiveCall] = {}
        self._acked: set[str] = set()
        self._pending: dict[str, asyncio.Future[None]] = {}
        self._waker = asyncio.Event()
        self._draining = False
        self._lock_file: IO[bytes] | None = None
        self._originate_log: OriginateLog | None = None
        self._http: httpx.AsyncClient | None = None
        self._on_state_lost = on_state_lost
        self.state_lost: StateLostError | None = None  # set once: nothing is dialled after
        self._used_before: bool | None = None
        self._watch: asyncio.Task[None] | None = None

    # --- lifecycle ---------------------------------------------------------------
    def lock(self) -> None:
        """Take the data dir for this process (fails fast if another cell holds it)."""
        if self._lock_file is not None:
            return
        data_dir = self.config.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self._used_before = used_before(data_dir)  # before the lock file says so
        lock_file = (data_dir / "cell.lock").open("wb")
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock_file.close()
            raise CellConfigError(
                f"another cell process uses data dir {data_dir}; give each cell its own",
                field="data_dir",
            ) from None
        self._lock_file = lock_file

    def open_originate_log(self) -> None:
        """Open the record of dialled calls; raises StateLostError if it is lost."""
        self.lock()
        if self._originate_log is not None:
            return
        path = self.config.data_dir / FILE_NAME
        create = may_create(
            log_exists=path.exists(),
            used_before=bool(self._used_before),
            first_start=self.config.first_start,
        )
        if not create:
            raise StateLostError(
                f"the originate log {path} is missing but a cell ran in this data dir before:"
                " calls it dialled could be dialled again; restore the file, or start with"
                " --first-start if this data dir never dialled",
                field="originate_log",
            )
        self._originate_log = OriginateLog(path, create=True)

    async def start(self) -> None:
        self.open_originate_log()
        self._watch = asyncio.create_task(self._watch_originate_log(), name="originate-watch")
        self.approved.recover()
        for meta in self.recordings.recover():
            log.warning("recovered recording", extra={"call_id": meta.call_id})
        timeout = httpx.Timeout(self.config.upload_timeout_s, connect=10.0)
        self._http = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        log.info("cell started", extra={"boot_id": self.boot_id, "mode": self.config.mode})

    async def _watch_originate_log(self) -> None:
        assert self._originate_log is not None
        while self.state_lost is None:
            await asyncio.sleep(WATCH_S)
            try:
                self._originate_log.check()
            except StateLostError as exc:
                self._lose_state(exc)

    def _lose_state(self, exc: StateLostError) -> None:
        """Dial nothing more and stop the process (it exits non-zero): one log line."""
        if self.state_lost is not None:
            return
        self.state_lost = exc
        self._draining = True
        log.critical("%s; this cell dials nothing more and stops", exc.message)
        self._on_state_lost()

    async def aclose(self) -> None:
        self._draining = True
        if self._watch is not None:
            self._watch.cancel()
        for live in list(self._live.values()):
            live.request_hangup(ReasonCode.CELL_SHUTDOWN)
        tasks = [live.task for live in self._live.values() if live.task is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.config.shutdown_grace_s)
            for task in pending:
                task.cancel()
        await self.driver.aclose()
        if self._http is not None:
            await self._http.aclose()
        if self._originate_log is not None:
            await self._originate_log.aclose()
        if self._lock_file is not None:
            self._lock_file.close()

    # --- CallHost ----------------------------------------------------------------
    def record(self, call_id: str) -> CallRecord:
        try:
            return self._calls[call_id]
        except KeyError:
            raise CallNotFoundError(
                f"no call {call_id} on this cell (boot {self.boot_id})"
            ) from None

    def save(self, record: CallRecord) -> None:
        self._calls[record.call_id] = record

    def emit(self, type_: EventType, call_id: str, data: Mapping[str, Any]) -> None:
        self.events.append(type_, call_id, self.now(), data)

    def _on_event(self, event: CellEvent) -> None:
        self.metrics.events.labels(event.type.value).inc()
        if event.type is EventType.ENDED:
            self.metrics.ended.labels(event.data["outcome"]).inc()
        waker, self._waker = self._waker, asyncio.Event()
        waker.set()

    # --- calls -------------------------------------------------------------------
    async def originate(self, body: object) -> tuple[CallRecord, bool]:
        """Dial a plan once; returns (call, created)."""
        try:
            return await self._originate(parse_plan(body))
        except CellError as exc:
            self.metrics.originate_refused.labels(wire_error(exc)[1]).inc()
            raise

    def _existing(self, plan: CallPlan) -> CallRecord | None:
        existing = self._calls.get(plan.call_id)
        if existing is not None and existing.plan.digest != plan.digest:
            raise CallIdConflictError(f"call_id {plan.call_id} is used by another plan")
        return existing

    def _admit(self, plan: CallPlan) -> None:
        assert self._originate_log is not None, "start() first"
        if plan.call_id in self._originate_log.dialled or plan.call_id in self._acked:
            raise CallAlreadyDialledError(f"call_id {plan.call_id} was already dialled")
        self.providers.check(plan.agent)
        if self.state_lost is not None:
            raise StateLostError(self.state_lost.message, field="originate_log")
        if self._draining:
            raise CellDrainingError("the cell is shutting down")
        if len(self._live) + len(self._pending) >= self.config.max_calls:
            raise CellBusyError(f"the cell already runs {self.config.max_calls} calls")

    async def _originate(self, plan: CallPlan) -> tuple[CallRecord, bool]:
        while (pending := self._pending.get(plan.call_id)) is not None:
            await asyncio.shield(pending)  # the same call_id is being logged right now
        existing = self._existing(plan)
        if existing is not None:
            return existing, False
        self._admit(plan)
        assert self._originate_log is not None
        now = self.now()
        reserved: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending[plan.call_id] = reserved
        try:
            await self._originate_log.append(plan.log_entry(self.boot_id, iso(now)))
        except StateLostError as exc:
            self._lose_state(exc)
            raise
        finally:
            del self._pending[plan.call_id]
            reserved.set_result(None)
        return self._dial(plan, now), True

    def _dial(self, plan: CallPlan, now: datetime) -> CallRecord:
        """Start a call whose originate-log entry is durable."""
        self.metrics.originated.inc()
        record = CallRecord(
            plan=plan, boot_id=self.boot_id, state=CallState.DIALING, created_at=now
        )
        self.save(record)
        self.emit(EventType.DIALING, plan.call_id, plan.dialing_data())
        live = LiveCall(self, plan)
        self._live[plan.call_id] = live
        live.task = asyncio.create_task(self._run(live), name=f"call-{plan.call_id}")
        self._gauges()
        return record

    async def _run(self, live: LiveCall) -> None:
        try:
            await live.run(self.driver)
        finally:
            self._live.pop(live.plan.call_id, None)
            self._gauges()
        target = live.plan.recording_upload
        if target is not None and self.recordings.exists(live.plan.call_id):
            try:
                await self.upload(live.plan.call_id, target)
            except CellError as exc:
                log.warning("automatic upload refused: %s", exc.message)

    def _gauges(self) -> None:
        self.metrics.in_progress.set(len(self._live))
        self.metrics.tracked.set(len(self._calls))

    def hangup(self, call_id: str) -> CallRecord:
        record = self.record(call_id)
        live = self._live.get(call_id)
        if live is not None and not record.ended:
            live.request_hangup(ReasonCode.HANGUP_REQUESTED)
        return record

    def list_calls(self, state: CallState | None = None) -> list[CallRecord]:
        records = sorted(self._calls.values(), key=lambda r: (r.created_at, r.call_id))
        return [r for r in records if state is None or r.state is state]

    def ack(self, call_id: str) -> None:
        if call_id in self._acked:
            return
        record = self.record(call_id)
        if not record.ended or call_id in self._live:
            raise CallNotEndedError(f"call {call_id} has not finished ({record.state.value})")
        del self._calls[call_id]
        self._acked.add(call_id)
        self.events.prune(call_id)
        self._delete_if_settled(call_id)
        self._gauges()

    # --- recordings --------------------------------------------------------------
    def _delete_if_settled(self, call_id: str) -> None:
        if not self.recordings.exists(call_id):
            return
        upload = self.recordings.get(call_id).upload
        if upload is not None and upload.status in SETTLED:
            self.recordings.delete(call_id)

    def orphans(self) -> list[RecordingMeta]:
        """Recordings on disk whose call this boot does not track (earlier boots, acked)."""
        return [m for m in self.recordings.all() if m.call_id not in self._calls]

    def delete_orphan(self, call_id: str) -> None:
        if call_id in self._calls:
            raise CellConflictError(f"call {call_id} is tracked; acknowledge it first")
        self.recordings.delete(call_id)

    async def upload(self, call_id: str, target: UploadTarget) -> UploadResult:
        assert self._http is not None, "start() first"
        result = await upload_recording(
            self.recordings,
            self._http,
            call_id,
            target,
            self.now,
            self.config.upload_expiry_skew_s,
        )
        self.metrics.uploads.labels(result.state.status.value).inc()
        if call_id not in self._acked:
            self.emit(EventType.UPLOAD, call_id, result.to_json())
        if call_id not in self._calls:
            self._delete_if_settled(call_id)
        return result

    # --- info --------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        return {
            "boot_id": self.boot_id,
            "mode": self.config.mode,
            "version": __version__,
            "started_at": iso(self.started_at),
            "time_scale": self.config.time_scale,
            "calls_in_progress": len(self._live),
            "calls_tracked": len(self._calls),
            "last_seq": self.events.last_seq,
            "max_calls": self.config.max_calls,
            "draining": self._draining,
            "providers": self.providers.names(),
            "cell_id": self.config.cell_id,
            "config_sha256": self.approved.digest,
        }

    def load_config(self, body: object) -> dict[str, Any]:
        """Carry this approved SIP snapshot from now on (kept across restarts)."""
        digest = self.approved.load(body)
        log.info("approved configuration loaded", extra={"config_sha256": digest})
        return {"cell_id": self.config.cell_id, "config_sha256": digest}

    async def wait_events(self, after: int, timeout: float, limit: int = 500) -> list[CellEvent]:
        """Events after ``after``; waits up to ``timeout`` seconds for the first one."""
        events = self.events.since(after, limit)
        if events:
            return events
        waker = self._waker
        try:
            await asyncio.wait_for(waker.wait(), timeout)
        except TimeoutError:
            return []
        return self.events.since(after, limit)
