"""The port through which the D drives the media plane (the ``cell`` process).

The real adapter wraps ``cell.client`` (:mod:`dispatcher.calls.cell_adapter`); unit tests
use a small fake behind this same Protocol. Errors crossing the port:

    DispatcherError
    └── CellError
        ├── CellRejected     the cell refused the request (bad plan, call_id conflict):
        │                    definitive, nothing was dialled
        └── CellUnavailable  no answer (connection refused, timeout): it is unknown
                             whether the call was placed — never retry blindly
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from dispatcher.domain.results import TranscriptSegment
from dispatcher.errors import DispatcherError


class CellError(DispatcherError):
    """A cell request failed. Fix: check DISPATCHER_CELL_URL and the cell's logs."""


class CellRejected(CellError):
    """The cell refused the request; the execution ends as failed with the code given."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code}: {message}")


class CellUnavailable(CellError):
    """The cell did not answer; the execution becomes unknown until reconciled."""


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
    recording: Mapping[str, Any] | None


@dataclass(frozen=True)
class CellEvent:
    """One event of the cell's ordered stream."""

    seq: int
    boot_id: str
    type: str
    call_id: str
    at: datetime
    data: Mapping[str, Any]


class CellPort(Protocol):
    async def boot_id(self) -> str: ...

    async def originate(self, plan: Mapping[str, Any]) -> CellCall:
        """Idempotent on ``plan['call_id']`` within one cell boot."""
        ...

    async def hangup(self, call_id: str) -> None: ...

    async def get_call(self, call_id: str) -> CellCall | None: ...

    async def list_calls(self) -> list[CellCall]: ...

    def events(self, after: int) -> AsyncIterator[CellEvent]:
        """Events with ``seq > after`` of the current boot, in order, forever."""
        ...

    async def ack(self, call_id: str) -> None:
        """The D has persisted the call's final result; the cell may forget it."""
        ...

    async def aclose(self) -> None: ...
