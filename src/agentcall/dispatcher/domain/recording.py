"""The recording state machine (D-REC-1, D-REC-2): persisted states and pure transitions.

::

    waiting ─file_ready─► ready ─authorized─► authorized ─uploaded─► put_done ─verified─► uploaded
                            ▲                  │     │                   ▲
                            └──── expired ◄────┘     └─► put_unknown ────┘
              (re-authorize the same upload_id/object_key, only when the cell asked for it)

    any open state ── explicit failure, checksum mismatch, deadline ──► unavailable(error_code)

Every transition returns a new frozen :class:`Recording`. Reports that arrive late or
twice (a replayed cell event) leave the recording unchanged; a move the table forbids
raises :class:`~agentcall.dispatcher.domain.states.IllegalTransition`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from agentcall.dispatcher.domain.states import IllegalTransition


class RecordingState(StrEnum):
    WAITING = "waiting"  # the call ended; the cell has not reported the file yet
    READY = "ready"  # the file is known; no usable authorization
    AUTHORIZED = "authorized"  # a presigned PUT was issued and handed to the cell
    EXPIRED = "expired"  # the authorization expired before any PUT: may be re-authorized
    PUT_UNKNOWN = "put_unknown"  # a PUT started (or may have) with no known result
    PUT_DONE = "put_done"  # the cell reports a 2xx: size and SHA-256 still to verify
    UPLOADED = "uploaded"  # closed: the object in the bucket matches the recording
    UNAVAILABLE = "unavailable"  # closed with an error code

    @property
    def closed(self) -> bool:
        return self in (RecordingState.UPLOADED, RecordingState.UNAVAILABLE)


class ErrorCode(StrEnum):
    """``recording.error_code`` of an ``unavailable`` recording (D-REC-2)."""

    AUTHORIZATION_FAILED = "upload_authorization_failed"
    AUTHORIZATION_EXPIRED = "upload_authorization_expired"
    UPLOAD_FAILED = "upload_failed"
    UPLOAD_TIMEOUT = "upload_timeout"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    CHECKSUM_MISMATCH = "checksum_mismatch"


class Source(StrEnum):
    CALL = "call"  # reported by the cell for a call it tracks
    ORPHAN = "orphan"  # left on disk by a cell that restarted (possibly partial)


S = RecordingState
_OPEN = frozenset(s for s in S if not s.closed)
_MOVES: dict[RecordingState, frozenset[RecordingState]] = {
    S.WAITING: frozenset({S.READY, S.UNAVAILABLE}),
    S.READY: frozenset({S.AUTHORIZED, S.UNAVAILABLE}),
    S.AUTHORIZED: frozenset({S.EXPIRED, S.PUT_UNKNOWN, S.PUT_DONE, S.UPLOADED, S.UNAVAILABLE}),
    S.EXPIRED: frozenset({S.AUTHORIZED, S.UNAVAILABLE}),
    S.PUT_UNKNOWN: frozenset({S.EXPIRED, S.PUT_DONE, S.UPLOADED, S.UNAVAILABLE}),
    S.PUT_DONE: frozenset({S.UPLOADED, S.UNAVAILABLE}),
    S.UPLOADED: frozenset(),
    S.UNAVAILABLE: frozenset(),
}


def check_move(current: RecordingState, target: RecordingState) -> RecordingState:
    """``target`` if the table allows it; staying in an open state is always allowed."""
    if (target is current and current in _OPEN) or target in _MOVES[current]:
        return target
    raise IllegalTransition(f"recording cannot go from {current} to {target}")


@dataclass(frozen=True)
class Media:
    """The recording file as the cell reports it."""

    format: str
    channels: int
    sample_rate_hz: int
    duration_ms: int
    size_bytes: int
    checksum_sha256: str
    partial: bool = False

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Media:
        """From the stored form (:meth:`to_json`), also an orphan's ``Ending.recording``."""
        return Media(
            format=str(data.get("format") or "wav"),
            channels=int(data.get("channels") or 1),
            sample_rate_hz=int(data.get("sample_rate_hz") or 8000),
            duration_ms=int(data.get("duration_ms") or 0),
            size_bytes=int(data["size_bytes"]),
            checksum_sha256=str(data["checksum_sha256"]),
            partial=bool(data.get("partial", False)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "channels": self.channels,
            "sample_rate_hz": self.sample_rate_hz,
            "duration_ms": self.duration_ms,
            "size_bytes": self.size_bytes,
            "checksum_sha256": self.checksum_sha256,
            "partial": self.partial,
        }


@dataclass(frozen=True)
class Recording:
    execution_id: str
    call_id: str
    recording_id: str
    upload_id: str
    bucket: str
    object_key: str
    source: Source
    state: RecordingState
    media: Media | None
    ended_at: datetime
    deadline_at: datetime
    authorizations: int = 0
    authorized_until: datetime | None = None
    error_code: ErrorCode | None = None
    detail: str | None = None
    renewal_requested: bool = False  # the cell asked for a new grant (D-NOTE-7)
    grant_url: str | None = field(default=None, repr=False)  # issued, no answer about it yet


class UploadStatus(StrEnum):
    """What the cell answered to one upload request (or reported in ``call.upload``)."""

    UPLOADED = "uploaded"  # 2xx from the storage server
    EXPIRED = "expired"  # the URL had expired; nothing was sent
    FAILED = "failed"  # with an error code (timeout = outcome unknown)
    REFUSED = "refused"  # 409 upload_not_allowed: a PUT was already started or settled
    MISSING = "missing"  # the cell has no such recording file any more


@dataclass(frozen=True)
class UploadReport:
    status: UploadStatus
    error_code: str | None = None
    expires_at: datetime | None = None
    detail: str | None = None
    renewal_requested: bool = False  # expired before the PUT began: the cell asks again


@dataclass(frozen=True)
class ObjectFacts:
    """What the bucket holds under the object key (HEAD size + SHA-256 of the body)."""

    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class Missing:
    """The bucket has no object under the key."""


Probe = ObjectFacts | Missing | None  # None: the bucket could not be asked


def _to(rec: Recording, target: RecordingState, **changes: Any) -> Recording:
    state = check_move(rec.state, target)
    grant = changes.pop("grant_url", None if state is not S.AUTHORIZED else rec.grant_url)
    return replace(rec, state=state, grant_url=grant, **changes)


def close(rec: Recording, code: ErrorCode, detail: str | None = None) -> Recording:
    return _to(rec, S.UNAVAILABLE, error_code=code, detail=detail)


def file_ready(rec: Recording, media: Media) -> Recording:
    """The cell reported the file; later reports of the same file change nothing."""
    if rec.state is not S.WAITING:
        return rec
    return _to(rec, S.READY, media=media)


def authorized(rec: Recording, until: datetime, url: str | None = None) -> Recording:
    """A presigned PUT for the fixed upload_id/object_key was issued (D-REC-1); a pending
    renewal request is answered by it."""
    return _to(
        rec,
        S.AUTHORIZED,
        authorizations=rec.authorizations + 1,
        authorized_until=until,
        renewal_requested=False,
        grant_url=url,
    )


def renewable(rec: Recording) -> bool:
    """D-NOTE-7: a new authorization only answers the cell's explicit request, for a grant
    that expired before its PUT began; the D never re-issues one on its own."""
    return rec.state is S.EXPIRED and rec.renewal_requested


_STALE_SLACK = timedelta(seconds=1)
_FAILED_CODES = {
    ErrorCode.AUTHORIZATION_FAILED.value: ErrorCode.AUTHORIZATION_FAILED,
    ErrorCode.UPLOAD_FAILED.value: ErrorCode.UPLOAD_FAILED,
}


def _stale_expiry(rec: Recording, report: UploadReport) -> bool:
    """An ``expired`` report about an earlier authorization than the current one."""
    if report.expires_at is None or rec.authorized_until is None:
        return False
    return report.expires_at + _STALE_SLACK < rec.authorized_until


def upload_reported(rec: Recording, report: UploadReport) -> Recording:
    """Apply the cell's answer about the (single) PUT; a PUT once started is never retried."""
    if rec.state not in (S.AUTHORIZED, S.PUT_UNKNOWN):
        return rec  # a late or replayed report: the recording is already further along
    status = report.status
    if status is UploadStatus.UPLOADED:
        return _to(rec, S.PUT_DONE, detail=report.detail)
    if status is UploadStatus.EXPIRED:
        if _stale_expiry(rec, report):
            return rec
        return _to(rec, S.EXPIRED, detail=report.detail, renewal_requested=report.renewal_requested)
    if status is UploadStatus.REFUSED:
        return _to(rec, S.PUT_UNKNOWN, detail=report.detail)
    if status is UploadStatus.MISSING:
        return close(rec, ErrorCode.UPLOAD_FAILED, report.detail)
    if report.error_code == ErrorCode.UPLOAD_TIMEOUT.value:
        return _to(rec, S.PUT_UNKNOWN, detail=report.detail)
    code = _FAILED_CODES.get(report.error_code or "", ErrorCode.UPLOAD_FAILED)
    return close(rec, code, report.detail)


def _verdict(rec: Recording, facts: ObjectFacts) -> Recording:
    media = rec.media
    if media is not None and (facts.size_bytes, facts.sha256) == (
        media.size_bytes,
        media.checksum_sha256,
    ):
        return _to(rec, S.UPLOADED, detail=None)
    expected = "unknown" if media is None else f"{media.size_bytes} bytes {media.checksum_sha256}"
    found = f"{facts.size_bytes} bytes {facts.sha256}"
    return close(rec, ErrorCode.CHECKSUM_MISMATCH, f"expected {expected}, found {found}")


def verified(rec: Recording, probe: Probe) -> Recording:
    """Compare the object in the bucket with the recording (size and SHA-256)."""
    if rec.state not in (S.AUTHORIZED, S.PUT_UNKNOWN, S.PUT_DONE) or probe is None:
        return rec
    if isinstance(probe, ObjectFacts):
        return _verdict(rec, probe)
    if rec.state is S.PUT_DONE:
        return close(rec, ErrorCode.UPLOAD_FAILED, "no object in the bucket after a 2xx PUT")
    return rec  # the PUT may still land before the deadline


_AT_DEADLINE = {
    S.WAITING: ErrorCode.DEADLINE_EXCEEDED,
    S.READY: ErrorCode.DEADLINE_EXCEEDED,
    S.EXPIRED: ErrorCode.AUTHORIZATION_EXPIRED,
    S.AUTHORIZED: ErrorCode.UPLOAD_TIMEOUT,
    S.PUT_UNKNOWN: ErrorCode.UPLOAD_TIMEOUT,
    S.PUT_DONE: ErrorCode.DEADLINE_EXCEEDED,
}


def deadline_passed(rec: Recording, probe: Probe) -> Recording:
    """Close at ``ended_at`` + window: what is in the bucket wins, else the state's code."""
    if rec.state.closed:
        return rec
    if isinstance(probe, ObjectFacts) and rec.state in (S.AUTHORIZED, S.PUT_UNKNOWN, S.PUT_DONE):
        return _verdict(rec, probe)
    if rec.state is S.PUT_DONE and isinstance(probe, Missing):
        return close(rec, ErrorCode.UPLOAD_FAILED, "no object in the bucket after a 2xx PUT")
    return close(rec, _AT_DEADLINE[rec.state], f"deadline passed in state {rec.state}")
