"""The audit log's use cases (docs/orbit/audit.md): record the entries of an action that has
no task transaction to join, and read a page of the caller's namespace.

Recording: a task write (cancel, retry, resolve, submit) writes its audit line in its own
transaction (`usecases.task_writes`). Any other state-changing action calls, right after its
own commit, one line:

    await record(store, principal, "queues.update", "queue", queue_id, {"rate": 10})

(`store`: the `TaskStore` the server holds, `Operations.store`). The origin, remote address and
request id come from the request bound by the HTTP edge (`domain.audit.bind_source`); secrets
in `detail` are masked (`domain.audit.scrub_detail`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agentcall.orbit.domain.audit import (
    AuditEntry,
    AuditPosition,
    AuditQuery,
    audit_entry,
    decode_audit_cursor,
    encode_audit_cursor,
)
from agentcall.orbit.domain.errors import PermissionDenied
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.ports import TaskStore

__all__ = ["AuditPage", "list_audit", "record", "record_audit"]

MAX_LIMIT = 200


@dataclass(frozen=True, slots=True)
class AuditPage:
    items: list[AuditEntry]
    next_cursor: str | None


async def record_audit(store: TaskStore, *entries: AuditEntry) -> None:
    """Store `entries` now (their own transaction, the database clock)."""
    await store.record_audit(entries)


async def record(
    store: TaskStore,
    principal: Principal,
    action: str,
    target_kind: str,
    target_id: str | None,
    detail: Mapping[str, JsonValue] | None = None,
) -> None:
    """The one-line call: `principal`'s `action` on a target, from the bound request."""
    await store.record_audit([audit_entry(principal, action, target_kind, target_id, detail)])


async def list_audit(
    store: TaskStore, principal: Principal, query: AuditQuery, cursor: str | None, limit: int
) -> AuditPage:
    """A page of the caller's namespace, newest first (permission `audit:read`)."""
    if Permission.AUDIT_READ not in principal.permissions:
        raise PermissionDenied(f"the token lacks the {Permission.AUDIT_READ.value} permission")
    if query.namespace_id != principal.namespace_id:
        raise PermissionDenied("the audit log of another namespace is not visible")
    after = None if cursor is None else decode_audit_cursor(cursor, query)
    limit = max(1, min(limit, MAX_LIMIT))
    rows = await store.audit_page(query, after, limit + 1)
    if len(rows) <= limit:
        return AuditPage(rows, None)
    last = rows[limit - 1]
    assert last.at is not None and last.id is not None  # stored entries have both
    return AuditPage(rows[:limit], encode_audit_cursor(AuditPosition(last.at, last.id), query))
