"""The cell's ordered event stream.

Every event gets the next sequence number of this boot (1, 2, 3 …, never reused,
never reordered). A subscriber resumes with ``after=<last seq it handled>``.
Events of acknowledged calls are pruned; nothing else is ever dropped.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.cell.domain.model import EventType


def iso(at: datetime) -> str:
    """RFC 3339 UTC with milliseconds."""
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class CellEvent:
    seq: int
    boot_id: str
    type: EventType
    call_id: str
    at: datetime
    data: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "boot_id": self.boot_id,
            "type": self.type.value,
            "call_id": self.call_id,
            "at": iso(self.at),
            "data": dict(self.data),
        }


class EventLog:
    """In-memory, append-only log with per-boot sequence numbers (pure: no I/O)."""

    def __init__(self, boot_id: str, on_append: Callable[[CellEvent], None] | None = None):
        self.boot_id = boot_id
        self._seqs: list[int] = []
        self._events: list[CellEvent] = []
        self._pruned_calls: set[str] = set()
        self._counts: dict[str, int] = {}
        self._dead = 0
        self._last_seq = 0
        self._on_append = on_append

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def __len__(self) -> int:
        return len(self._events) - self._dead

    def append(
        self, type_: EventType, call_id: str, at: datetime, data: Mapping[str, Any]
    ) -> CellEvent:
        if call_id in self._pruned_calls:
            raise ValueError(f"call {call_id} was acknowledged; it has no more events")
        self._last_seq += 1
        event = CellEvent(self._last_seq, self.boot_id, type_, call_id, at, dict(data))
        self._seqs.append(event.seq)
        self._events.append(event)
        self._counts[call_id] = self._counts.get(call_id, 0) + 1
        if self._on_append is not None:
            self._on_append(event)
        return event

    def since(self, after: int, limit: int | None = None) -> list[CellEvent]:
        """Retained events with ``seq > after`` in order (at most ``limit``)."""
        start = bisect.bisect_right(self._seqs, after)
        out: list[CellEvent] = []
        for event in self._events[start:]:
            if event.call_id in self._pruned_calls:
                continue
            out.append(event)
            if limit is not None and len(out) >= limit:
                break
        return out

    def for_call(self, call_id: str) -> list[CellEvent]:
        return [e for e in self._events if e.call_id == call_id]

    def prune(self, call_id: str) -> int:
        """Forget the events of an acknowledged call; returns how many were dropped."""
        if call_id in self._pruned_calls:
            return 0
        dropped = self._counts.pop(call_id, 0)
        self._pruned_calls.add(call_id)
        self._dead += dropped
        if self._dead * 2 > len(self._events):
            self._compact()
        return dropped

    def _compact(self) -> None:
        self._events = [e for e in self._events if e.call_id not in self._pruned_calls]
        self._seqs = [e.seq for e in self._events]
        self._dead = 0
