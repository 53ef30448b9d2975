"""The real :class:`~.port.CellPort`: a thin wrapper over ``agentcall.cell.client``.

This is the only module of the dispatcher that imports from the cell package. It
translates the port's plan into the client's, the client's models into the port's frozen
data (an event's detail is read here, once: :func:`event_detail`), and its errors into the
port's outcomes: *refused* (nothing was dialled), *unavailable* (unknown) and *call_id
taken* (``already_dialled`` / ``call_id_conflict``: the call exists or existed — unknown,
never "nothing dialled").
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx

from agentcall.cell.client import (
    AlreadyDialledError,
    AmdAction,
    CallIdConflictError,
    CallInfo,
    CallNotFoundError,
    CellBusyError,
    CellClient,
    CellClientError,
    CellDrainingError,
    CellRequestError,
    Event,
    EventType,
    Orphan,
    Plan,
    RecordingInfo,
    Trunk,
    UploadResult,
    UploadTarget,
)
from agentcall.dispatcher.cell import port
from agentcall.dispatcher.cell.port import (
    CallEnded,
    CallIdTaken,
    CellCall,
    CellEvent,
    CellOrphan,
    CellPlan,
    CellRejected,
    CellUnavailable,
    CellUpload,
    EventDetail,
)
from agentcall.dispatcher.domain.identity import CellIdentity
from agentcall.dispatcher.domain.reconnect import CELL_EVENTS
from agentcall.dispatcher.domain.recording import Media
from agentcall.dispatcher.domain.results import TranscriptSegment

# Besides CellClientError, what a cell that dies mid-request can surface through the client's
# HTTP stack: transport errors, and anyio's AttributeError on a socket already closed
# ("'NoneType' object has no attribute 'getpeername'"). All mean: the cell did not answer.
UNANSWERED = (CellClientError, httpx.HTTPError, OSError, AttributeError)


def _why(exc: Exception) -> str:
    return exc.message if isinstance(exc, CellClientError) else f"{type(exc).__name__}: {exc}"


def _now() -> datetime:
    return datetime.now(UTC)


def to_media(rec: RecordingInfo) -> Media:
    return Media(
        format=rec.format,
        channels=rec.channels,
        sample_rate_hz=rec.sample_rate_hz,
        duration_ms=rec.duration_ms,
        size_bytes=rec.size_bytes,
        checksum_sha256=rec.sha256,
        partial=rec.partial,
    )


def to_cell_call(info: CallInfo) -> CellCall:
    recording = to_media(info.recording) if info.recording is not None else None
    return CellCall(
        call_id=info.call_id,
        boot_id=info.boot_id,
        state=info.state.value,
        started_at=info.created_at or _now(),
        ended_at=info.ended_at,
        outcome=info.outcome,
        reason_code=info.reason_code,
        transcript=tuple(
            TranscriptSegment(t.turn_id, t.segment_id, t.role, t.text, t.start_ms, t.end_ms)
            for t in info.transcript
        ),
        opt_out=info.opt_out,
        recording_expected=info.recording_expected,
        recording=recording,
        quality=dict(info.quality) if info.quality is not None else None,
    )


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:  # not a time: read as absent
        return None


def _ended(data: Mapping[str, Any]) -> CallEnded:
    turns = data.get("transcript_turns")
    quality = data.get("quality")
    return CallEnded(
        outcome=str(data.get("outcome") or "failed"),
        reason_code=data.get("reason_code"),
        started_at=_time(data.get("started_at")),
        ended_at=_time(data.get("ended_at")),
        opt_out=bool(data.get("opt_out")),
        recording_expected=bool(data.get("recording_expected")),
        transcript_turns=turns if isinstance(turns, int) else 0,
        quality=quality if isinstance(quality, dict) else None,
    )


def _recording(data: Mapping[str, Any]) -> Media | None:
    if data.get("size_bytes") is None or not data.get("sha256"):
        return None  # nothing the D could verify an upload against
    return Media(
        format=str(data.get("format") or "wav"),
        channels=int(data.get("channels") or 1),
        sample_rate_hz=int(data.get("sample_rate_hz") or 8000),
        duration_ms=int(data.get("duration_ms") or 0),
        size_bytes=int(data["size_bytes"]),
        checksum_sha256=str(data["sha256"]),
        partial=bool(data.get("partial", False)),
    )


def _upload(data: Mapping[str, Any]) -> CellUpload | None:
    expires = data.get("expires_at")
    message = data.get("message")
    if not isinstance(data.get("upload_id"), str):
        return None
    return CellUpload(
        call_id=str(data.get("call_id") or ""),
        upload_id=data["upload_id"],
        status=str(data.get("status")),
        error_code=data.get("error_code"),
        put_started=bool(data.get("put_started")),
        expires_at=_time(expires),
        size_bytes=int(data.get("size_bytes") or 0),
        sha256=str(data.get("sha256") or ""),
        message=message if isinstance(message, str) else None,
        renewal_requested=data.get("renewal_requested") is True,
    )


def event_detail(type_: str, data: Mapping[str, Any]) -> EventDetail:
    """The typed detail of an event, read from its wire ``data`` once (see the port)."""
    if type_ == EventType.ENDED:
        return _ended(data)
    if type_ == EventType.RECORDING_READY:
        return _recording(data)
    if type_ == EventType.UPLOAD:
        return _upload(data)
    return None


def _event(event: Event) -> CellEvent:
    return CellEvent(
        seq=event.seq,
        boot_id=event.boot_id,
        type=event.type,
        call_id=event.call_id or "",
        at=event.at or _now(),
        detail=event_detail(event.type, event.data),
    )


def to_upload(result: UploadResult) -> CellUpload:
    return CellUpload(
        call_id=result.call_id,
        upload_id=result.upload_id,
        status=result.status,
        error_code=result.error_code,
        put_started=result.put_started,
        expires_at=result.expires_at,
        size_bytes=result.size_bytes,
        sha256=result.sha256,
        message=result.message,
        renewal_requested=result.renewal_requested,
    )


def to_orphan(orphan: Orphan) -> CellOrphan:
    return CellOrphan(
        call_id=orphan.call_id,
        boot_id=orphan.boot_id,
        partial=orphan.partial,
        size_bytes=orphan.size_bytes,
        sha256=orphan.sha256,
        duration_ms=orphan.duration_ms,
        upload_status=orphan.upload_status,
    )


def to_plan(plan: CellPlan) -> Plan:
    t = plan.trunk
    trunk = Trunk(
        t.trunk_id,
        t.dial_prefix,
        t.server_host,
        t.server_port,
        t.transport,
        t.auth_mode,
        t.registration_required,
        t.media_profile,
    )
    return Plan(
        call_id=plan.call_id,
        trunk=trunk,
        caller_id=plan.caller_id,
        callee=plan.callee,
        ring_timeout_ms=plan.ring_timeout_ms,
        max_duration_ms=plan.max_duration_ms,
        agent=plan.agent,
        tags=plan.tags,
        amd=AmdAction(plan.amd) if plan.amd else None,
    )


def originate_error(exc: Exception) -> port.CellPortError:
    """The port's outcome of a failed originate (see :mod:`.port`)."""
    if isinstance(exc, CellBusyError | CellDrainingError):
        code = "busy" if isinstance(exc, CellBusyError) else "draining"
        return CellRejected(code, exc.message)
    if isinstance(exc, AlreadyDialledError | CallIdConflictError):
        return CallIdTaken(exc.code, exc.message)
    if isinstance(exc, CellRequestError):
        if exc.status >= 500:  # the cell failed midway: it may have dialled
            return CellUnavailable(f"originate: {exc.code}: {exc.message}")
        return CellRejected(exc.code, exc.message)
    return CellUnavailable(f"originate: {_why(exc)}")


def _ack_error(answer: CellClientError | None) -> port.CellPortError | None:
    if answer is None or isinstance(answer, CallNotFoundError):
        return None  # acknowledged, or forgotten already
    return CellUnavailable(f"ack: {_why(answer)}")


T = TypeVar("T")


class CellAdapter:
    """CellPort over HTTP + WebSocket (``agentcall.cell.client.CellClient``)."""

    def __init__(self, base_url: str, timeout_s: float = 10.0, max_inflight: int = 32) -> None:
        self._client = CellClient(base_url, timeout_s=timeout_s, reconnect=CELL_EVENTS)
        # Bounded in-flight requests: a queue of thousands of requests inside the HTTP
        # connection pool costs quadratic time; waiting here is cheap and not a timeout.
        self._limit = asyncio.Semaphore(max_inflight)

    async def _limited(self, request: Awaitable[T]) -> T:
        async with self._limit:
            return await request

    async def boot_id(self) -> str:
        try:
            return (await self._limited(self._client.info())).boot_id
        except UNANSWERED as exc:
            raise CellUnavailable(f"cell info: {_why(exc)}") from exc

    async def originate(self, plan: CellPlan) -> CellCall:
        try:
            return to_cell_call(await self._limited(self._client.originate(to_plan(plan))))
        except UNANSWERED as exc:
            raise originate_error(exc) from exc

    async def originate_many(
        self, plans: Sequence[CellPlan]
    ) -> list[CellCall | port.CellPortError]:
        try:
            answers = await self._limited(self._client.originate_many([to_plan(p) for p in plans]))
        except UNANSWERED as exc:  # the client never raises CellClientError here; the stack may
            return [originate_error(exc)] * len(plans)
        return [
            originate_error(a) if isinstance(a, CellClientError) else to_cell_call(a)
            for a in answers
        ]

    async def ack_many(self, call_ids: Sequence[str]) -> list[port.CellPortError | None]:
        try:
            answers = await self._limited(self._client.ack_many(call_ids))
        except UNANSWERED as exc:
            return [CellUnavailable(f"ack: {_why(exc)}")] * len(call_ids)
        return [_ack_error(a) for a in answers]

    async def hangup(self, call_id: str) -> None:
        try:
            await self._limited(self._client.hangup(call_id))
        except CellRequestError:
            return  # already ended or unknown: nothing to hang up
        except UNANSWERED as exc:
            raise CellUnavailable(f"hangup: {_why(exc)}") from exc

    async def get_call(self, call_id: str) -> CellCall | None:
        try:
            return to_cell_call(await self._limited(self._client.get_call(call_id)))
        except CallNotFoundError:
            return None
        except UNANSWERED as exc:
            raise CellUnavailable(f"get call: {_why(exc)}") from exc

    async def list_calls(self) -> list[CellCall]:
        try:
            return [to_cell_call(c) for c in await self._limited(self._client.list_calls())]
        except UNANSWERED as exc:
            raise CellUnavailable(f"list calls: {_why(exc)}") from exc

    async def events(self, after: int, boot_id: str | None = None) -> AsyncIterator[CellEvent]:
        stream = self._client.events(after, boot_id)
        try:
            async for event in stream:
                yield _event(event)
        except UNANSWERED as exc:
            raise CellUnavailable(f"events: {_why(exc)}") from exc
        finally:
            await stream.aclose()

    async def ack(self, call_id: str) -> None:
        try:
            await self._limited(self._client.ack(call_id))
        except CallNotFoundError:
            return
        except UNANSWERED as exc:
            raise CellUnavailable(f"ack: {_why(exc)}") from exc

    async def upload_recording(
        self, call_id: str, upload_id: str, url: str, headers: Mapping[str, str]
    ) -> CellUpload:
        target = UploadTarget(upload_id, url, dict(headers))
        try:
            return to_upload(await self._client.upload_recording(call_id, target))
        except CellRequestError as exc:
            raise CellRejected(exc.code, exc.message) from exc
        except UNANSWERED as exc:
            raise CellUnavailable(f"upload: {_why(exc)}") from exc

    async def orphans(self) -> list[CellOrphan]:
        try:
            return [to_orphan(o) for o in await self._client.orphans()]
        except UNANSWERED as exc:
            raise CellUnavailable(f"orphans: {_why(exc)}") from exc

    async def delete_orphan(self, call_id: str) -> None:
        try:
            await self._client.delete_orphan(call_id)
        except CellRequestError:
            return  # gone already, or its call is still tracked: nothing to delete now
        except UNANSWERED as exc:
            raise CellUnavailable(f"delete orphan: {_why(exc)}") from exc

    async def identity(self) -> CellIdentity:
        try:
            info = await self._client.info()
        except UNANSWERED as exc:
            raise CellUnavailable(f"info: {_why(exc)}") from exc
        return CellIdentity(info.cell_id, info.config_sha256)

    async def aclose(self) -> None:
        await self._client.aclose()
