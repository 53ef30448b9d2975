"""The port through which the D drives the media plane (the ``cell`` process).

The real adapter wraps ``agentcall.cell.client`` (:mod:`.adapter`); tests use the one
in-memory fake behind this same Protocol (:mod:`.fake`). Both ways the port carries typed
data: the D hands a :class:`CellPlan`, and gets :class:`CellCall` and :class:`CellEvent`
whose ``detail`` is read from the wire once, in the adapter (:class:`CallEnded`, the
recording's :class:`Media`, or the :class:`CellUpload` report). Errors crossing the port:

    DispatcherError
    └── CellPortError
        ├── CellRejected     the cell refused the request (bad plan, busy): definitive,
        │                    nothing was dialled
        └── CellUnavailable  no answer (connection refused, timeout): it is unknown
            │                whether the call was placed — never retry blindly
            └── CallIdTaken  the cell knows this call_id already (dialled before, or used
                             by another plan): it exists or existed — reconcile, never
                             treat it as "nothing dialled"
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol, runtime_checkable

from agentcall.dispatcher.domain.identity import CellIdentity
from agentcall.dispatcher.domain.recording import Media
from agentcall.dispatcher.domain.results import TranscriptSegment
from agentcall.dispatcher.errors import DispatcherError


class CellPortError(DispatcherError):
    """A cell request failed. Fix: check DISPATCHER_CELL_URL and the cell's logs."""


class CellRejected(CellPortError):
    """The cell refused the request; the execution ends as failed with the code given."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code}: {message}")


class CellUnavailable(CellPortError):
    """The cell did not answer; the execution becomes unknown until reconciled."""


class CallIdTaken(CellUnavailable):
    """The cell answered already_dialled / call_id_conflict: the call_id was used before.

    Its fate is unknown to the D (live, ended, or lost in a cell restart): the execution
    becomes unknown and is resolved by reconciliation, never redialled.
    """

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code}: {message}")


class CellTrunk(NamedTuple):
    """The pinned trunk a call is dialled through (the snapshot's trunk spec). The three
    per-call values of the port are immutable tuples: a frozen dataclass costs twice as much
    to build, on the path of every dial and every call's end."""

    trunk_id: str
    dial_prefix: str = ""
    server_host: str | None = None
    server_port: int | None = None
    transport: str | None = None
    auth_mode: str | None = None
    registration_required: bool | None = None
    media_profile: Mapping[str, Any] | None = None


class CellPlan(NamedTuple):
    """What the cell dials for one execution (``POST /v1/calls``)."""

    call_id: str
    trunk: CellTrunk
    caller_id: str
    callee: str
    ring_timeout_ms: int
    max_duration_ms: int
    agent: Mapping[str, Any]  # the task's agent.config as is: the cell reads it
    tags: Mapping[str, str]
    amd: str | None = None  # off | hangup | leave_message; None: the cell's default


@dataclass(frozen=True)
class CellCall:
    """A call as the cell reports it (``GET /v1/calls/{id}``)."""

    call_id: str
    boot_id: str
    state: str
    started_at: datetime
    ended_at: datetime | None
    outcome: str | None
    reason_code: str | None
    transcript: tuple[TranscriptSegment, ...]
    opt_out: bool
    recording_expected: bool
    recording: Media | None
    quality: Mapping[str, Any] | None = None  # the cell's media/voice figures (SIP mode)


@dataclass(frozen=True)
class CellUpload:
    """The cell's answer about the one PUT of a recording (also the ``call.upload`` event)."""

    call_id: str
    upload_id: str
    status: str  # uploaded | expired | failed
    error_code: str | None
    put_started: bool
    expires_at: datetime | None
    size_bytes: int
    sha256: str
    message: str | None
    renewal_requested: bool = False  # the grant expired before the PUT: asks for a new one


@dataclass(frozen=True)
class CellOrphan:
    """A recording left on the cell's disk for a call the cell no longer tracks."""

    call_id: str
    boot_id: str
    partial: bool
    size_bytes: int | None
    sha256: str | None
    duration_ms: int | None
    upload_status: str | None  # None: never uploaded; "unknown": the cell died mid-PUT


class CallEnded(NamedTuple):
    """What a ``call.ended`` event says (absent fields read as the D has always read them:
    no outcome is ``failed``, no time is the time it was read)."""

    outcome: str
    reason_code: str | None
    started_at: datetime | None
    ended_at: datetime | None
    opt_out: bool
    recording_expected: bool
    transcript_turns: int  # > 0: the D reads the call for its transcript
    quality: Mapping[str, Any] | None = None


EventDetail = CallEnded | Media | CellUpload | None


@dataclass(frozen=True)
class CellEvent:
    """One event of the cell's ordered stream. ``detail`` by ``type``: ``call.ended`` a
    :class:`CallEnded`, ``call.recording_ready`` the :class:`Media` (None when the cell
    gave no size or digest), ``call.upload`` a :class:`CellUpload` (None when malformed);
    the other types carry none."""

    seq: int
    boot_id: str
    type: str
    call_id: str
    at: datetime
    detail: EventDetail = None


class CellPort(Protocol):
    async def boot_id(self) -> str: ...

    async def originate(self, plan: CellPlan) -> CellCall:
        """Idempotent on ``plan.call_id`` within one cell boot."""
        ...

    async def hangup(self, call_id: str) -> None: ...

    async def get_call(self, call_id: str) -> CellCall | None: ...

    async def list_calls(self) -> list[CellCall]: ...

    def events(self, after: int, boot_id: str | None = None) -> AsyncIterator[CellEvent]:
        """Events with ``seq > after`` of boot ``boot_id``, in order, forever; if the cell
        runs another boot, one ``cell.restarted`` event and the new boot from its start."""
        ...

    async def ack(self, call_id: str) -> None:
        """The D has persisted the call's final result; the cell may forget it."""
        ...

    async def upload_recording(
        self, call_id: str, upload_id: str, url: str, headers: Mapping[str, str]
    ) -> CellUpload:
        """Ask the cell to PUT the call's recording once to ``url`` (never retried).

        Raises CellRejected ``upload_not_allowed`` (a PUT was already started or settled),
        ``recording_not_found`` / ``call_not_found`` (no file), ``invalid_request``.
        """
        ...

    async def orphans(self) -> list[CellOrphan]: ...

    async def delete_orphan(self, call_id: str) -> None: ...

    async def identity(self) -> CellIdentity:
        """The cell's ``cell_id`` and the digest of the configuration it applies (D-NOTE-9)."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class BatchingCell(Protocol):
    """Optional: a cell port that originates and acknowledges many calls per request.

    Each item gets what the single call would have given: a :class:`CellCall` or the
    :class:`CellPortError` the single call would have raised (``originate_many``), ``None``
    or that error (``ack_many``); a request that fails as a whole gives its error to
    every item. Never raises.
    """

    async def originate_many(self, plans: Sequence[CellPlan]) -> list[CellCall | CellPortError]: ...

    async def ack_many(self, call_ids: Sequence[str]) -> list[CellPortError | None]: ...
