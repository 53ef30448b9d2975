"""Task discovery v0.3 (event cursor): cursor parsing and page assembly (D-DISC-1..3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentcall.mocksaas.errors import InvalidCursor, InvalidRequest

SCHEMA_VERSION = "task-discovery.v0.3-proposal"
MAX_PAGE_SIZE = 256
UINT64_MAX = 2**64 - 1


@dataclass(frozen=True)
class TaskRecord:
    """Latest discovery record of one task, with the event id that produced it."""

    event_id: int
    task_id: str
    tenant_id: str
    tenant_key: str
    status: str
    task_revision: int

    def item(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "tenant_id": self.tenant_id,
            "tenant_key": self.tenant_key,
            "status": self.status,
            "task_revision": self.task_revision,
        }


def parse_cursor(raw: str | None, head: int) -> int:
    """Parse ``after``: canonical decimal uint64 (no sign, no leading zero), <= head.

    A missing ``after`` is an invalid cursor too: the first request sends ``after=0``.
    """
    if raw is None or raw == "":
        raise InvalidCursor("after is required (first request: after=0)")
    if not raw.isascii() or not raw.isdigit():
        raise InvalidCursor("after must be a canonical decimal uint64")
    if len(raw) > 1 and raw[0] == "0":
        raise InvalidCursor("after must not have leading zeros")
    value = int(raw)
    if value > UINT64_MAX:
        raise InvalidCursor("after exceeds uint64")
    if value > head:
        raise InvalidCursor("after is beyond the head of this dispatcher's event log")
    return value


def check_page_size(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_PAGE_SIZE:
        raise InvalidRequest("discovery_page_size", f"must be an integer 1..{MAX_PAGE_SIZE}")
    return value


def build_page(dispatcher_id: str, after: int, records: Sequence[TaskRecord]) -> dict[str, Any]:
    """Body of a 200 page: records in ascending event order; empty page keeps the cursor."""
    ordered = sorted(records, key=lambda r: r.event_id)
    if any(r.event_id <= after for r in ordered):
        raise ValueError("a page may only hold records after the cursor")
    next_cursor = ordered[-1].event_id if ordered else after
    return {
        "schema_version": SCHEMA_VERSION,
        "dispatcher_id": dispatcher_id,
        "tasks": [r.item() for r in ordered],
        "next_cursor": str(next_cursor),
    }


def select_latest(events: Sequence[TaskRecord], after: int, limit: int) -> list[TaskRecord]:
    """Reference selection over a whole event log: the latest record of each task whose
    latest event is after ``after``, ascending, at most ``limit`` (the store does the same
    in SQL; tests compare both)."""
    latest: dict[str, TaskRecord] = {}
    for event in events:
        known = latest.get(event.task_id)
        if known is None or event.event_id > known.event_id:
            latest[event.task_id] = event
    chosen = sorted((r for r in latest.values() if r.event_id > after), key=lambda r: r.event_id)
    return chosen[:limit]
