"""The cell's event stream read in batches, and the call endings it reports.

Applying a batch to the executions is :func:`agentcall.dispatcher.calls.transaction.apply_batch`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import datetime

from agentcall.dispatcher.cell.port import CallEnded, CellCall, CellEvent, CellPort
from agentcall.dispatcher.domain.results import CallEnd, TranscriptSegment
from agentcall.dispatcher.finalize.result import Ending

_STOP = object()
RESTARTED = "cell.restarted"
ENDED = "call.ended"

__all__ = ["CellEvent", "EventBatcher", "endings"]


class EventBatcher:
    """Reads the cell's stream in a side task and yields whatever has arrived as a batch."""

    def __init__(
        self, cell: CellPort, after: int, batch_max: int = 1000, boot_id: str | None = None
    ) -> None:
        self._cell = cell
        self._after = after
        self._boot_id = boot_id
        self._max = batch_max
        self._queue: asyncio.Queue[object] = asyncio.Queue(maxsize=10_000)

    async def _pump(self) -> None:
        try:
            async for event in self._cell.events(self._after, self._boot_id):
                await self._queue.put(event)
        except BaseException as exc:  # handed to the consumer side
            await self._queue.put(exc)
            return
        await self._queue.put(_STOP)

    async def batches(self) -> AsyncIterator[list[CellEvent]]:
        pump = asyncio.create_task(self._pump(), name="calls.event_pump")
        try:
            while True:
                items = [await self._queue.get()]
                while not self._queue.empty() and len(items) < self._max:
                    items.append(self._queue.get_nowait())
                batch = [i for i in items if isinstance(i, CellEvent)]
                if batch:
                    yield batch
                for item in items:
                    if isinstance(item, BaseException):
                        raise item
                    if item is _STOP:
                        return
        finally:
            pump.cancel()


async def endings(cell: CellPort, batch: Sequence[CellEvent]) -> dict[str, CellCall | None]:
    """Full call records for ended calls that had a conversation (to get the transcript)."""
    wanted = [
        e.call_id
        for e in batch
        if isinstance(e.detail, CallEnded) and e.detail.transcript_turns > 0
    ]
    calls = await asyncio.gather(*(cell.get_call(call_id) for call_id in wanted))
    return dict(zip(wanted, calls, strict=True))


def ending_from_event(
    ended: CallEnded, transcript: tuple[TranscriptSegment, ...], now: datetime
) -> Ending:
    end = CallEnd(
        started_at=ended.started_at or now,
        ended_at=ended.ended_at or now,
        outcome=ended.outcome,
        reason_code=ended.reason_code,
        transcript=transcript,
        opt_out=ended.opt_out,
        quality=dict(ended.quality) if ended.quality is not None else None,
    )
    return Ending(end, recording_expected=ended.recording_expected)


def ending_from_call(call: CellCall, now: datetime) -> Ending:
    end = CallEnd(
        started_at=call.started_at,
        ended_at=call.ended_at or now,
        outcome=call.outcome or "failed",
        reason_code=call.reason_code,
        transcript=call.transcript,
        opt_out=call.opt_out,
        quality=dict(call.quality) if call.quality is not None else None,
    )
    recording = call.recording.to_json() if call.recording is not None else None
    return Ending(end, recording_expected=call.recording_expected, recording=recording)
