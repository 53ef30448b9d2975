"""Bulk operations as SQL (`agentcall.orbit.domain.bulk`, tables of migration 0009): the
operation row with its snapshot of matched tasks (each with the revision it had), the claim of
the server process running it, one batch's outcomes and progress, and the reads of the API.

The claim is a conditional UPDATE (free, or its `claim_until` lapsed, on the database clock):
exactly one process wins it. Every batch's write is conditional on the claim still being this
process's, so a process that lost its claim (it stalled past `claim_until` and another took
over) writes nothing more."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.bulk import (
    MAX_MATCHED,
    BulkAction,
    BulkOperation,
    BulkRequest,
    BulkState,
    Outcome,
    Progress,
)
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.search import filter_json, parse_filter
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.tokens import Permission, TokenRecord
from agentcall.orbit.store.search import conditions
from agentcall.orbit.store.tables import bulk_operation_tasks, bulk_operations, tasks, token_queues
from agentcall.orbit.store.tables import tokens as token_table

ops_c, items_c = bulk_operations.c, bulk_operation_tasks.c
INSERT_CHUNK = 1000


@dataclass(frozen=True, slots=True)
class NewOperation:
    id: str
    namespace_id: str
    token_id: str
    key: str
    request_id: str
    request: BulkRequest


@dataclass(frozen=True, slots=True)
class Item:
    seq: int
    task_id: str
    revision: int
    outcome: Outcome | None = None
    message: str | None = None


async def snapshot(conn: AsyncConnection, request: BulkRequest) -> list[tuple[str, int]]:
    """(task id, revision) of every matching task, newest created first; refused above
    `MAX_MATCHED`."""
    query = (
        sa.select(tasks.c.id, tasks.c.revision)
        .where(*conditions(request.where))
        .order_by(tasks.c.created_at.desc(), tasks.c.id.desc())
        .limit(MAX_MATCHED + 1)
    )
    rows = [(r.id, int(r.revision)) for r in await conn.execute(query)]
    if len(rows) > MAX_MATCHED:
        raise InvalidArgument(
            f"matches more than {MAX_MATCHED} tasks; narrow it (e.g. a time range)", "filter"
        )
    return rows


async def insert_operation(
    conn: AsyncConnection, new: NewOperation, matched: Sequence[tuple[str, int]], now: datetime
) -> None:
    request = new.request
    row: dict[str, Any] = {
        "id": new.id,
        "namespace_id": new.namespace_id,
        "token_id": new.token_id,
        "idempotency_key": new.key,
        "request_id": new.request_id,
        "queue_id": request.where.queue_id,
        "filter": dumps(dict(filter_json(request.where))),
        "action": request.action.value,
        "action_body": dumps(request.body),
        "state": BulkState.RUNNING.value,
        "total": len(matched),
        "next_seq": 0,
        "done_count": 0,
        "skipped_count": 0,
        "failed_count": 0,
        "error": None,
        "claimed_by": None,
        "claim_until": None,
        "created_at": now,
        "updated_at": now,
        "finished_at": None,
    }
    await conn.execute(sa.insert(bulk_operations), [row])
    rows = [
        {"operation_id": new.id, "seq": seq, "task_id": task_id, "revision": revision}
        for seq, (task_id, revision) in enumerate(matched)
    ]
    for start in range(0, len(rows), INSERT_CHUNK):
        await conn.execute(sa.insert(bulk_operation_tasks), rows[start : start + INSERT_CHUNK])


async def find_by_key(conn: AsyncConnection, namespace_id: str, key: str) -> BulkOperation | None:
    query = sa.select(bulk_operations).where(
        ops_c.namespace_id == namespace_id, ops_c.idempotency_key == key
    )
    row = (await conn.execute(query)).first()
    return None if row is None else operation_of(row)


async def load_operation(conn: AsyncConnection, operation_id: str) -> BulkOperation | None:
    row = (await conn.execute(sa.select(bulk_operations).where(ops_c.id == operation_id))).first()
    return None if row is None else operation_of(row)


async def list_operations(
    conn: AsyncConnection,
    namespace_id: str,
    queue_ids: frozenset[str],
    after: tuple[datetime, str] | None,
    limit: int,
) -> list[BulkOperation]:
    """Newest first, keyset-paged on (created_at, id), the queues of `queue_ids` only."""
    terms = [ops_c.namespace_id == namespace_id, ops_c.queue_id.in_(sorted(queue_ids))]
    if after is not None:
        created_at, operation_id = after
        terms.append(
            sa.or_(
                ops_c.created_at < created_at,
                sa.and_(ops_c.created_at == created_at, ops_c.id < operation_id),
            )
        )
    query = (
        sa.select(bulk_operations)
        .where(*terms)
        .order_by(ops_c.created_at.desc(), ops_c.id.desc())
        .limit(limit)
    )
    return [operation_of(r) for r in await conn.execute(query)]


async def claimable_ids(conn: AsyncConnection, now: datetime, limit: int = 5) -> list[str]:
    lapsed = sa.or_(ops_c.claim_until.is_(None), ops_c.claim_until <= now)
    query = (
        sa.select(ops_c.id)
        .where(ops_c.state == BulkState.RUNNING.value, lapsed)
        .order_by(ops_c.created_at)
        .limit(limit)
    )
    return [r.id for r in await conn.execute(query)]


async def claim(
    conn: AsyncConnection, operation_id: str, server_id: str, now: datetime, until: datetime
) -> bool:
    """Take the operation if it is still running and free; one process wins."""
    lapsed = sa.or_(ops_c.claim_until.is_(None), ops_c.claim_until <= now)
    update = (
        sa.update(bulk_operations)
        .where(ops_c.id == operation_id, ops_c.state == BulkState.RUNNING.value, lapsed)
        .values(claimed_by=server_id, claim_until=until)
    )
    return (await conn.execute(update)).rowcount == 1


async def release(conn: AsyncConnection, operation_id: str, server_id: str) -> None:
    update = (
        sa.update(bulk_operations)
        .where(ops_c.id == operation_id, ops_c.claimed_by == server_id)
        .values(claimed_by=None, claim_until=None)
    )
    await conn.execute(update)


async def load_items(conn: AsyncConnection, operation_id: str, seqs: range) -> list[Item]:
    if not seqs:
        return []
    query = (
        sa.select(items_c.seq, items_c.task_id, items_c.revision)
        .where(
            items_c.operation_id == operation_id,
            items_c.seq >= seqs.start,
            items_c.seq < seqs.stop,
        )
        .order_by(items_c.seq)
    )
    return [Item(r.seq, r.task_id, int(r.revision)) for r in await conn.execute(query)]


async def record_batch(
    conn: AsyncConnection,
    op: BulkOperation,
    server_id: str,
    done: Sequence[Item],
    progress: Progress,
    now: datetime,
    until: datetime,
) -> bool:
    """One batch's outcomes, the new progress and the renewed claim, in the caller's
    transaction; False (nothing written) when the claim is no longer this process's."""
    next_seq = (done[-1].seq + 1) if done else op.next_seq
    update = (
        sa.update(bulk_operations)
        .where(ops_c.id == op.id, ops_c.claimed_by == server_id, ops_c.next_seq == op.next_seq)
        .values(
            next_seq=next_seq,
            done_count=progress.done,
            skipped_count=progress.skipped,
            failed_count=progress.failed,
            claim_until=until,
            updated_at=now,
        )
    )
    if (await conn.execute(update)).rowcount != 1:
        return False
    marked = [item for item in done if item.outcome is not Outcome.DONE]
    if marked:
        statement = (
            sa.update(bulk_operation_tasks)
            .where(
                items_c.operation_id == op.id,
                items_c.seq == sa.bindparam("b_seq"),
            )
            .values(outcome=sa.bindparam("b_outcome"), message=sa.bindparam("b_message"))
        )
        await conn.execute(statement, [_marked(item) for item in marked])
    if done:
        await conn.execute(
            sa.update(bulk_operation_tasks)
            .where(
                items_c.operation_id == op.id,
                items_c.seq >= op.next_seq,
                items_c.seq < next_seq,
                items_c.outcome.is_(None),
            )
            .values(outcome=Outcome.DONE.value)
        )
    return True


def _marked(item: Item) -> dict[str, Any]:
    assert item.outcome is not None
    return {"b_seq": item.seq, "b_outcome": item.outcome.value, "b_message": item.message}


async def finish(
    conn: AsyncConnection,
    operation_id: str,
    state: BulkState,
    now: datetime,
    error: str | None,
    *,
    keep_claim: bool = False,
) -> bool:
    """RUNNING → `state` (conditional: a cancel that came first wins). The runner gives its
    claim back; a cancel keeps it, so that the batch in flight is still recorded."""
    values: dict[str, Any] = {
        "state": state.value,
        "error": error,
        "finished_at": now,
        "updated_at": now,
    }
    if not keep_claim:
        values |= {"claimed_by": None, "claim_until": None}
    update = (
        sa.update(bulk_operations)
        .where(ops_c.id == operation_id, ops_c.state == BulkState.RUNNING.value)
        .values(**values)
    )
    return (await conn.execute(update)).rowcount == 1


async def item_page(
    conn: AsyncConnection,
    operation_id: str,
    outcome: Outcome | None,
    after_seq: int | None,
    limit: int,
) -> list[Item]:
    terms = [items_c.operation_id == operation_id]
    if outcome is not None:
        terms.append(items_c.outcome == outcome.value)
    if after_seq is not None:
        terms.append(items_c.seq > after_seq)
    query = sa.select(bulk_operation_tasks).where(*terms).order_by(items_c.seq).limit(limit)
    return [
        Item(
            r.seq,
            r.task_id,
            int(r.revision),
            None if r.outcome is None else Outcome(r.outcome),
            r.message,
        )
        for r in await conn.execute(query)
    ]


async def token_record(conn: AsyncConnection, token_id: str) -> TokenRecord | None:
    """The token an operation acts as, read again for every batch (revocation stops it)."""
    t, q = token_table.c, token_queues.c
    query = (
        sa.select(t.id, t.namespace_id, t.permissions, t.expires_at, t.revoked_at, q.queue_id)
        .select_from(token_table.outerjoin(token_queues, q.token_id == t.id))
        .where(t.id == token_id)
    )
    rows = (await conn.execute(query)).all()
    if not rows:
        return None
    first = rows[0]
    return TokenRecord(
        token_id=first.id,
        namespace_id=first.namespace_id,
        permissions=frozenset(Permission(p) for p in first.permissions.split()),
        queue_ids=frozenset(r.queue_id for r in rows if r.queue_id is not None),
        expires_at=first.expires_at,
        revoked_at=first.revoked_at,
    )


def operation_of(r: Any) -> BulkOperation:
    body = read_json_text(r.action_body)
    assert isinstance(body, dict)
    found: JsonValue = read_json_text(r.filter)
    return BulkOperation(
        id=r.id,
        namespace_id=r.namespace_id,
        token_id=r.token_id,
        queue_id=r.queue_id,
        filter=parse_filter(found),
        action=BulkAction(r.action),
        body=body,
        state=BulkState(r.state),
        progress=Progress(r.total, r.done_count, r.skipped_count, r.failed_count),
        next_seq=r.next_seq,
        error=r.error,
        request_id=r.request_id,
        created_at=r.created_at,
        updated_at=r.updated_at,
        finished_at=r.finished_at,
    )
