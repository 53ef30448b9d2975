"""Frozen data exchanged with the cell (wire form in docs/cell.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentcall.cell.client._errors import CellProtocolError
from agentcall.cell.domain.model import AmdAction, CallState


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _need(obj: Mapping[str, Any], key: str) -> Any:
    try:
        return obj[key]
    except (KeyError, TypeError):
        raise CellProtocolError(f"the cell's answer lacks {key!r}") from None


@dataclass(frozen=True)
class Trunk:
    trunk_id: str
    dial_prefix: str = ""
    server_host: str | None = None
    server_port: int | None = None
    transport: str | None = None
    auth_mode: str | None = None
    registration_required: bool | None = None
    media_profile: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"trunk_id": self.trunk_id, "dial_prefix": self.dial_prefix}
        for key in ("server_host", "server_port", "transport", "auth_mode"):
            out[key] = getattr(self, key)
        if self.registration_required is not None:
            out["registration_required"] = self.registration_required
        if self.media_profile is not None:
            out["media_profile"] = dict(self.media_profile)
        return out


@dataclass(frozen=True)
class UploadTarget:
    """A presigned PUT authorization (the URL is a secret: never log it)."""

    upload_id: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"upload_id": self.upload_id, "url": self.url, "headers": dict(self.headers)}

    def __repr__(self) -> str:
        return f"UploadTarget(upload_id={self.upload_id!r}, url=<redacted>)"


@dataclass(frozen=True)
class Plan:
    """What to dial: the D's pinned snapshot. ``agent`` is the task's agent.config as is."""

    call_id: str
    trunk: Trunk
    caller_id: str
    callee: str
    ring_timeout_ms: int
    max_duration_ms: int
    agent: Mapping[str, Any]
    recording_upload: UploadTarget | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    amd: AmdAction | None = None  # None: the cell's default (CELL_AMD)

    def __post_init__(self) -> None:
        if self.amd is not None:
            object.__setattr__(self, "amd", AmdAction(self.amd))  # ValueError when unknown

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "call_id": self.call_id,
            "trunk": self.trunk.to_json(),
            "caller_id": self.caller_id,
            "callee": self.callee,
            "ring_timeout_ms": self.ring_timeout_ms,
            "max_duration_ms": self.max_duration_ms,
            "agent": dict(self.agent),
            "tags": dict(self.tags),
        }
        if self.recording_upload is not None:
            out["recording_upload"] = self.recording_upload.to_json()
        if self.amd is not None:
            out["amd"] = self.amd.value
        return out


@dataclass(frozen=True)
class TranscriptTurn:
    turn_id: str
    segment_id: str
    role: str  # user | agent
    text: str
    start_ms: int
    end_ms: int

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> TranscriptTurn:
        keys = ("turn_id", "segment_id", "role", "text", "start_ms", "end_ms")
        return TranscriptTurn(*(_need(obj, k) for k in keys))


@dataclass(frozen=True)
class RecordingInfo:
    path: str
    size_bytes: int
    sha256: str
    duration_ms: int
    partial: bool
    format: str = "wav"
    sample_rate_hz: int = 8000
    channels: int = 1

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> RecordingInfo:
        return RecordingInfo(
            path=_need(obj, "path"),
            size_bytes=_need(obj, "size_bytes"),
            sha256=_need(obj, "sha256"),
            duration_ms=_need(obj, "duration_ms"),
            partial=bool(obj.get("partial", False)),
            format=obj.get("format", "wav"),
            sample_rate_hz=obj.get("sample_rate_hz", 8000),
            channels=obj.get("channels", 1),
        )


@dataclass(frozen=True)
class CallInfo:
    call_id: str
    boot_id: str
    state: CallState
    callee: str
    dialled: str
    caller_id: str
    trunk_id: str
    created_at: datetime | None
    ringing_at: datetime | None
    answered_at: datetime | None
    ended_at: datetime | None
    outcome: str | None  # answered | no_answer | busy | rejected | failed
    reason_code: str | None
    cause: str | None
    ring_ms: int | None
    talk_ms: int | None
    duration_ms: int | None
    opt_out: bool
    transcript: tuple[TranscriptTurn, ...]
    recording_expected: bool
    recording: RecordingInfo | None
    tags: Mapping[str, str]
    # the cell's media/voice figures of an answered SIP call (docs/cell-sip.md), as is
    quality: Mapping[str, Any] | None = None

    @property
    def ended(self) -> bool:
        return self.state is CallState.ENDED

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> CallInfo:
        try:
            state = CallState(_need(obj, "state"))
        except ValueError:
            raise CellProtocolError(f"unknown call state {obj.get('state')!r}") from None
        recording = obj.get("recording")
        return CallInfo(
            call_id=_need(obj, "call_id"),
            boot_id=_need(obj, "boot_id"),
            state=state,
            callee=_need(obj, "callee"),
            dialled=_need(obj, "dialled"),
            caller_id=_need(obj, "caller_id"),
            trunk_id=_need(obj, "trunk_id"),
            created_at=_time(obj.get("created_at")),
            ringing_at=_time(obj.get("ringing_at")),
            answered_at=_time(obj.get("answered_at")),
            ended_at=_time(obj.get("ended_at")),
            outcome=obj.get("outcome"),
            reason_code=obj.get("reason_code"),
            cause=obj.get("cause"),
            ring_ms=obj.get("ring_ms"),
            talk_ms=obj.get("talk_ms"),
            duration_ms=obj.get("duration_ms"),
            opt_out=bool(obj.get("opt_out", False)),
            transcript=tuple(TranscriptTurn.from_json(t) for t in obj.get("transcript") or ()),
            recording_expected=bool(obj.get("recording_expected", False)),
            recording=RecordingInfo.from_json(recording) if recording else None,
            tags=dict(obj.get("tags") or {}),
            quality=obj["quality"] if isinstance(obj.get("quality"), dict) else None,
        )


@dataclass(frozen=True)
class Event:
    """One event of the stream; ``data`` depends on ``type`` (see docs/cell.md)."""

    seq: int
    boot_id: str
    type: str
    call_id: str | None
    at: datetime | None
    data: Mapping[str, Any]

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Event:
        seq = _need(obj, "seq")
        if not isinstance(seq, int):
            raise CellProtocolError("event seq is not an integer")
        return Event(
            seq=seq,
            boot_id=_need(obj, "boot_id"),
            type=_need(obj, "type"),
            call_id=obj.get("call_id"),
            at=_time(obj.get("at")),
            data=dict(obj.get("data") or {}),
        )

    def turn(self) -> TranscriptTurn:
        """The transcript turn of a ``call.transcript`` event."""
        return TranscriptTurn.from_json(self.data)

    def recording(self) -> RecordingInfo:
        """The recording of a ``call.recording_ready`` event."""
        return RecordingInfo.from_json(self.data)


def _opt_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class CellInfo:
    boot_id: str
    mode: str
    version: str
    calls_in_progress: int
    calls_tracked: int
    last_seq: int
    raw: Mapping[str, Any]
    cell_id: str | None = None  # the cell's own id (D-NOTE-9)
    config_sha256: str | None = None  # digest of the approved configuration it applies

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> CellInfo:
        return CellInfo(
            boot_id=_need(obj, "boot_id"),
            mode=_need(obj, "mode"),
            version=_need(obj, "version"),
            calls_in_progress=_need(obj, "calls_in_progress"),
            calls_tracked=_need(obj, "calls_tracked"),
            last_seq=_need(obj, "last_seq"),
            raw=dict(obj),
            cell_id=_opt_str(obj, "cell_id"),
            config_sha256=_opt_str(obj, "config_sha256"),
        )


@dataclass(frozen=True)
class UploadResult:
    """Outcome of the one PUT: ``uploaded``, ``failed`` or ``expired``."""

    call_id: str
    upload_id: str
    status: str
    put_started: bool
    http_status: int | None
    error_code: str | None  # the contract's recording.error_code when not uploaded
    message: str | None
    expires_at: datetime | None
    size_bytes: int
    sha256: str
    renewal_requested: bool = False  # expired before the PUT began: the cell asks for a new grant

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> UploadResult:
        return UploadResult(
            call_id=_need(obj, "call_id"),
            upload_id=_need(obj, "upload_id"),
            status=_need(obj, "status"),
            put_started=bool(obj.get("put_started")),
            http_status=obj.get("http_status"),
            error_code=obj.get("error_code"),
            message=obj.get("message"),
            expires_at=_time(obj.get("expires_at")),
            size_bytes=_need(obj, "size_bytes"),
            sha256=_need(obj, "sha256"),
            renewal_requested=obj.get("renewal_requested") is True,
        )


@dataclass(frozen=True)
class Orphan:
    """A recording on the cell's disk whose call it no longer tracks."""

    call_id: str
    boot_id: str
    path: str
    partial: bool
    size_bytes: int | None
    sha256: str | None
    duration_ms: int | None
    upload_id: str | None
    upload_status: str | None  # None: never uploaded; "unknown": the cell died mid-PUT

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Orphan:
        upload = obj.get("upload") or {}
        return Orphan(
            call_id=_need(obj, "call_id"),
            boot_id=_need(obj, "boot_id"),
            path=_need(obj, "path"),
            partial=bool(obj.get("partial")),
            size_bytes=obj.get("size_bytes"),
            sha256=obj.get("sha256"),
            duration_ms=obj.get("duration_ms"),
            upload_id=upload.get("upload_id"),
            upload_status=upload.get("status"),
        )
