"""The public client of the cell: the only module the Dispatcher imports from ``cell``.

It depends on the wire API only (httpx + websockets), never on cell internals: of the
cell it imports only the wire's vocabulary (``agentcall.cell.domain.model``), so a call
state, an event type or an answering-machine action is one type on both sides of the wire.
"""

from __future__ import annotations

from agentcall.cell.client._client import CellClient
from agentcall.cell.client._errors import (
    AlreadyDialledError,
    CallConflictError,
    CallIdConflictError,
    CallNotEndedError,
    CallNotFoundError,
    CellBusyError,
    CellClientError,
    CellDrainingError,
    CellProtocolError,
    CellRequestError,
    CellUnavailableError,
    InvalidPlanError,
    RecordingNotFoundError,
    UploadNotAllowedError,
)
from agentcall.cell.client._events import EventStream
from agentcall.cell.client._models import (
    CallInfo,
    CellInfo,
    Event,
    Orphan,
    Plan,
    RecordingInfo,
    TranscriptTurn,
    Trunk,
    UploadResult,
    UploadTarget,
)
from agentcall.cell.client._reconnect import ReconnectPolicy
from agentcall.cell.domain.model import AmdAction, CallState, EventType

__all__ = [
    "AlreadyDialledError",
    "AmdAction",
    "CallConflictError",
    "CallIdConflictError",
    "CallInfo",
    "CallNotEndedError",
    "CallNotFoundError",
    "CallState",
    "CellBusyError",
    "CellClient",
    "CellClientError",
    "CellDrainingError",
    "CellInfo",
    "CellProtocolError",
    "CellRequestError",
    "CellUnavailableError",
    "Event",
    "EventStream",
    "EventType",
    "InvalidPlanError",
    "Orphan",
    "Plan",
    "ReconnectPolicy",
    "RecordingInfo",
    "RecordingNotFoundError",
    "TranscriptTurn",
    "Trunk",
    "UploadNotAllowedError",
    "UploadResult",
    "UploadTarget",
]
