"""The real :class:`~.port.CellPort`: a thin wrapper over ``agentcall.cell.client``.

This is the only module of the dispatcher that imports from the cell package. It
translates the client's models into the port's frozen data and its errors into the
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
    CellDrainingError,
    CellError,
    CellRequestError,
    Event,
    Orphan,
    Plan,
    Trunk,
    UploadResult,
    UploadTarget,
)
from agentcall.dispatcher.cell import port
from agentcall.dispatcher.cell.port import (
    CallIdTaken,
    CellCall,
    CellEvent,
    CellOrphan,
    CellRejected,
    CellUnavailable,
    CellUpload,
)
from agentcall.dispatcher.domain.identity import CellIdentity
from agentcall.dispatcher.domain.results import TranscriptSegment

# Besides CellError, what a cell that dies mid-request can surface through the client's
# HTTP stack: transport errors, and anyio's AttributeError on a socket already closed
# ("'NoneType' object has no attribute 'getpeername'"). All mean: the cell did not answer.
UNANSWERED = (CellError, httpx.HTTPError, OSError, AttributeError)


def _why(exc: Exception) -> str:
    return exc.message if isinstance(exc, CellError) else f"{type(exc).__name__}: {exc}"


def _now() -> datetime:
    return datetime.now(UTC)


def to_cell_call(info: CallInfo) -> CellCall:
    recording: Mapping[str, Any] | None = None
    if info.recording is not None:
        rec = info.recording
        recording = {
            "format": rec.format,
            "channels": rec.channels,
            "sample_rate_hz": rec.sample_rate_hz,
            "duration_ms": rec.duration_ms,
            "size_bytes": rec.size_bytes,
            "checksum_sha256": rec.sha256,
            "partial": rec.partial,
        }
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


def _event(event: Event) -> CellEvent:
    return CellEvent(
        seq=event.seq,
        boot_id=event.boot_id,
        type=event.type,
        call_id=event.call_id or "",
        at=event.at or _now(),
        data=event.data,
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


def to_plan(body: Mapping[str, Any]) -> Plan:
    return Plan(
        call_id=body["call_id"],
        trunk=Trunk(**body["trunk"]),
        caller_id=body["caller_id"],
        callee=body["callee"],
        ring_timeout_ms=body["ring_timeout_ms"],
        max_duration_ms=body["max_duration_ms"],
        agent=body["agent"],
        tags=body.get("tags", {}),
        amd=AmdAction(body["amd"]) if body.get("amd") else None,
    )


def originate_error(exc: Exception) -> port.CellError:
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


def _ack_error(answer: CellError | None) -> port.CellError | None:
    if answer is None or isinstance(answer, CallNotFoundError):
        return None  # acknowledged, or forgotten already
    return CellUnavailable(f"ack: {_why(answer)}")


T = TypeVar("T")


class CellAdapter:
    """CellPort over HTTP + WebSocket (``cell.client.CellClient``)."""

    def __init__(self, base_url: str, timeout_s: float = 10.0, max_inflight: int = 32) -> None:
        self._client = CellClient(base_url, timeout_s=timeout_s)
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

    async def originate(self, plan: Mapping[str, Any]) -> CellCall:
        try:
            return to_cell_call(await self._limited(self._client.originate(to_plan(plan))))
        except UNANSWERED as exc:
            raise originate_error(exc) from exc

    async def originate_many(
        self, plans: Sequence[Mapping[str, Any]]
    ) -> list[CellCall | port.CellError]:
        try:
            answers = await self._limited(self._client.originate_many([to_plan(p) for p in plans]))
        except UNANSWERED as exc:  # the client never raises CellError here; the stack may
            return [originate_error(exc)] * len(plans)
        return [
            originate_error(a) if isinstance(a, CellError) else to_cell_call(a) for a in answers
        ]

    async def ack_many(self, call_ids: Sequence[str]) -> list[port.CellError | None]:
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
