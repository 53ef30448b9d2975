"""Evidence rows: idempotent per (attempt, key), at most 100 per attempt."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agentcall.orbit.domain.evidence import MAX_EVIDENCE_ITEMS, EvidenceItem
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.transitions import LiveAttempt
from agentcall.orbit.domain.worker_errors import EvidenceConflict, EvidenceLimit
from agentcall.orbit.store.connector import HotConnection, execute, fetch, write_all
from agentcall.orbit.store.sql import Increment, Insert, Update, Write
from agentcall.orbit.store.tables import task_attempt_evidence, task_attempts


async def check_evidence(
    conn: HotConnection, live: LiveAttempt, items: Sequence[EvidenceItem]
) -> list[EvidenceItem]:
    """The items not yet stored; a known key with other content or too many items raise."""
    if not items:
        return []
    params = {"attempt_id": live.id, "keys": [item.key for item in items]}
    known = {row.ev_key: row.digest for row in await fetch(conn, "evidence_digests", params)}
    fresh = []
    for item in items:
        stored = known.get(item.key)
        if stored is None:
            fresh.append(item)
        elif stored != item.digest:
            raise EvidenceConflict(f"evidence key {item.key!r} was recorded with other content")
    if live.evidence_count + len(fresh) > MAX_EVIDENCE_ITEMS:
        raise EvidenceLimit(f"an attempt holds at most {MAX_EVIDENCE_ITEMS} evidence items")
    return fresh


async def insert_evidence(
    conn: HotConnection, live: LiveAttempt, items: Sequence[EvidenceItem], now: datetime
) -> None:
    if not items:
        return
    await write_all(conn, [evidence_rows(live, items, now)])
    await execute(conn, "count_evidence", {"added": len(items), "attempt_id": live.id})


def evidence_writes(live: LiveAttempt, items: Sequence[EvidenceItem], now: datetime) -> list[Write]:
    """`insert_evidence` as writes to send with others: the rows and the attempt's count."""
    if not items:
        return []
    count = {"evidence_count": Increment(len(items))}
    return [evidence_rows(live, items, now), Update(task_attempts, [{"id": live.id}], static=count)]


def evidence_rows(live: LiveAttempt, items: Sequence[EvidenceItem], now: datetime) -> Insert:
    """The items in order after the attempt's `evidence_count` existing ones."""
    rows = [
        {
            "id": new_id(),
            "attempt_id": live.id,
            "task_id": live.task_id,
            "seq": live.evidence_count + index + 1,
            "ev_key": item.key,
            "kind": item.kind.value,
            "name": item.name,
            "uri": item.uri,
            "media_type": item.media_type,
            "size_bytes": item.size_bytes,
            "sha256": item.sha256,
            "data": item.data_text,
            "digest": item.digest,
            "created_at": now,
        }
        for index, item in enumerate(items)
    ]
    return Insert(task_attempt_evidence, rows)
