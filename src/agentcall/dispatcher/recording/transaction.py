"""Recording changes on the database thread, one transaction each (D-REC-1, D-REC-2).

Every change re-reads the row and applies a pure transition of :mod:`.model` to the
state it finds, so a cell event and a sweeper round racing for the same recording
cannot undo each other. A change that closes the recording stores the call's single
call.result in the same transaction
(:func:`agentcall.dispatcher.finalize.result.finalize_recorded`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.dispatcher.cell.port import CellEvent, CellUpload
from agentcall.dispatcher.domain import recording as model
from agentcall.dispatcher.domain.recording import (
    ErrorCode,
    Media,
    Recording,
    RecordingState,
    Source,
    UploadReport,
    UploadStatus,
)
from agentcall.dispatcher.domain.results import recording_unavailable, recording_uploaded
from agentcall.dispatcher.domain.states import IllegalTransition
from agentcall.dispatcher.finalize.result import Ending, finalize_recorded
from agentcall.dispatcher.recording.decide import deadline_for
from agentcall.dispatcher.recording.keys import recording_keys
from agentcall.dispatcher.store import recordings as store
from agentcall.dispatcher.store.executions import Execution

S = RecordingState
Change = Callable[[Recording], Recording]
ORPHAN = "orphan"  # Ending.recording["source"] of a recording left by a restarted cell

# The upload state a restarted cell lists for an orphan → where its recording starts.
_ORPHAN_START = {
    None: S.READY,
    "expired": S.EXPIRED,
    "started": S.PUT_UNKNOWN,
    "unknown": S.PUT_UNKNOWN,
    "uploaded": S.PUT_DONE,
}


@dataclass(frozen=True)
class Route:
    """Where the call.result of a closed recording goes."""

    dispatcher_id: str
    routing_key: str


@dataclass(frozen=True)
class Opener:
    """Opens the recording of a call that ended with one expected (a RecordingOpener)."""

    bucket: str
    key_prefix: str
    deadline_s: float

    def __call__(
        self, conn: sqlite3.Connection, execution: Execution, ending: Ending, now: datetime
    ) -> None:
        existing = store.get(conn, execution.execution_id)
        media = _media(ending.recording)
        if existing is not None:
            if media is not None and existing.state is S.WAITING:
                store.save(conn, model.file_ready(existing, media), now)
            return
        store.insert(conn, self.recording(execution, ending, media), now)

    def recording(self, execution: Execution, ending: Ending, media: Media | None) -> Recording:
        plan = execution.plan
        keys = recording_keys(self.key_prefix, plan.tenant_id, plan.task_id, execution.call_id)
        extra = ending.recording or {}
        orphan = extra.get("source") == ORPHAN
        state = S.WAITING if media is None else S.READY
        if orphan and media is not None:
            state = _ORPHAN_START.get(extra.get("upload"), S.PUT_UNKNOWN)
        # Renewed only on the cell's explicit request (D-NOTE-7), never on an orphan's state.
        asks = state is S.EXPIRED and extra.get("renewal_requested") is True
        ended_at = ending.end.ended_at
        return Recording(
            execution_id=execution.execution_id,
            call_id=execution.call_id,
            recording_id=keys.recording_id,
            upload_id=keys.upload_id,
            bucket=self.bucket,
            object_key=keys.object_key,
            source=Source.ORPHAN if orphan else Source.CALL,
            state=state,
            media=media,
            ended_at=ended_at,
            deadline_at=deadline_for(ended_at, self.deadline_s),
            renewal_requested=asks,
        )


def _media(data: Mapping[str, Any] | None) -> Media | None:
    if not data or data.get("size_bytes") is None or not data.get("checksum_sha256"):
        return None
    return Media.from_json(data)


def result_recording(rec: Recording) -> dict[str, Any]:
    """The ``recording`` object of the call.result for a closed recording (D-REC-2)."""
    media = rec.media.to_json() if rec.media else {}
    if rec.state is S.UPLOADED and rec.media is not None:
        return recording_uploaded(
            recording_id=rec.recording_id,
            upload_id=rec.upload_id,
            bucket=rec.bucket,
            object_key=rec.object_key,
            media=media,
        )
    code = rec.error_code or ErrorCode.DEADLINE_EXCEEDED
    return recording_unavailable(code.value, rec.recording_id, rec.upload_id, media)


def transition(
    conn: sqlite3.Connection, execution_id: str, change: Change, now: datetime, route: Route
) -> Recording | None:
    """Apply ``change`` to the stored recording; closing it stores the call.result."""
    current = store.get(conn, execution_id)
    if current is None:
        return None
    try:
        new = change(current)
    except IllegalTransition:
        return current  # the recording moved on meanwhile: the stored state wins
    if new == current:
        return current
    store.save(conn, new, now)
    if new.state.closed:
        finalize_recorded(
            conn,
            execution_id,
            result_recording(new),
            dispatcher_id=route.dispatcher_id,
            routing_key=route.routing_key,
            now=now,
        )
    return new


def transition_many(
    conn: sqlite3.Connection,
    changes: Sequence[tuple[str, Change]],
    now: datetime,
    route: Route,
) -> list[Recording | None]:
    """Several :func:`transition` calls in one transaction (one commit, one fsync)."""
    return [transition(conn, execution_id, change, now, route) for execution_id, change in changes]


def _file_ready(media: Media) -> Change:
    return lambda r: model.file_ready(r, media)


def files_found(
    conn: sqlite3.Connection, found: Mapping[str, Mapping[str, Any]], now: datetime, route: Route
) -> int:
    """Files of waiting recordings found as orphans of a restarted cell; returns how many."""
    changes: list[tuple[str, Change]] = []
    for call_id, data in found.items():
        rec, media = store.by_call_id(conn, call_id), _media(data)
        if rec is not None and media is not None:
            changes.append((rec.execution_id, _file_ready(media)))
    transition_many(conn, changes, now, route)
    return len(changes)


def report_of(
    status: str,
    error_code: str | None,
    expires_at: datetime | None,
    message: str | None,
    *,
    renewal_requested: bool = False,
) -> UploadReport:
    """An UploadReport from the cell's upload answer / ``call.upload`` event; the cell
    asks for a new grant only on an ``expired`` report (D-NOTE-7)."""
    try:
        kind = UploadStatus(status)
    except ValueError:
        kind = UploadStatus.FAILED
    asks = renewal_requested and kind is UploadStatus.EXPIRED
    return UploadReport(kind, error_code, expires_at, message, renewal_requested=asks)


_REFUSALS = {
    "upload_not_allowed": UploadReport(UploadStatus.REFUSED, None, None, "upload_not_allowed"),
    "recording_not_found": UploadReport(UploadStatus.MISSING, None, None, "recording_not_found"),
    "call_not_found": UploadReport(UploadStatus.MISSING, None, None, "call_not_found"),
}


def report_of_refusal(code: str, message: str) -> UploadReport:
    """The cell refused the upload request (4xx) → what it means for the recording."""
    if code in _REFUSALS:
        return _REFUSALS[code]
    error = ErrorCode.AUTHORIZATION_FAILED if code == "invalid_request" else None
    return UploadReport(
        UploadStatus.FAILED,
        (error or ErrorCode.UPLOAD_FAILED).value,
        None,
        f"{code}: {message}"[:300],
    )


def _event_change(event: CellEvent, rec: Recording) -> Change | None:
    detail = event.detail
    if event.type == "call.recording_ready" and isinstance(detail, Media):
        return lambda r: model.file_ready(r, detail)
    if isinstance(detail, CellUpload) and detail.upload_id == rec.upload_id:
        report = report_of(
            detail.status,
            detail.error_code,
            detail.expires_at,
            detail.message,
            renewal_requested=detail.renewal_requested,
        )
        return lambda r: model.upload_reported(r, report)
    return None


def apply_events(
    conn: sqlite3.Connection, batch: Sequence[CellEvent], now: datetime, route: Route
) -> list[Recording]:
    """``call.recording_ready`` / ``call.upload`` events; returns the recordings closed."""
    closed: list[Recording] = []
    for event in batch:
        if event.type not in ("call.recording_ready", "call.upload"):
            continue
        rec = store.by_call_id(conn, event.call_id)
        change = None if rec is None else _event_change(event, rec)
        if rec is None or change is None:
            continue
        new = transition(conn, rec.execution_id, change, now, route)
        if new is not None and new.state.closed and not rec.state.closed:
            closed.append(new)
    return closed
