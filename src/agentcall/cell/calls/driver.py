"""The seam between the cell and a way of placing calls (``sim`` now, ``sip`` later).

A :class:`CallDriver` runs one call from its plan and reports what happens through
the :class:`CallControl` the cell hands it. The cell guarantees the rest: event
order and sequence numbers, the originate log, idempotency, the recording store,
uploads and acknowledgement. A driver must:

- call ``ringing()`` / ``answered()`` / ``transcript()`` / ``opt_out()`` as things
  happen, and ``ended()`` exactly once (if it returns or raises without it, the cell
  ends the call as failed with reason ``cell_error``);
- watch ``hangup_requested`` and end the call promptly with ``hangup_reason``;
- write audio through ``open_recording()`` (8 kHz mono 16-bit PCM); the cell closes
  the file after ``ended()`` and announces it.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from agentcall.cell.calls.plan import CallPlan
from agentcall.cell.calls.record import Ending
from agentcall.cell.domain.model import ReasonCode, Turn
from agentcall.cell.recording.wav import WavWriter


class CallControl(Protocol):
    @property
    def plan(self) -> CallPlan: ...

    @property
    def hangup_requested(self) -> asyncio.Event: ...

    @property
    def hangup_reason(self) -> ReasonCode: ...

    def ringing(self) -> None: ...

    def answered(self) -> None: ...

    def transcript(self, turn: Turn) -> None: ...

    def opt_out(self, phrase: str | None, at_ms: int) -> None: ...

    def ended(self, ending: Ending) -> None: ...

    def open_recording(self) -> WavWriter: ...


class CallDriver(Protocol):
    mode: str

    async def run(self, call: CallControl) -> None: ...

    async def aclose(self) -> None: ...
