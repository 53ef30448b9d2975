"""The audit log's interface on the in-memory twin (docs/orbit/audit.md): an operator write
records who, what, from where and which request in its own transaction; other actions
record with one call; the page is the caller's namespace newest first, filtered, keyset-paged
with a cursor bound to its filters; secrets never reach an entry."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.audit import (
    MASK,
    AuditQuery,
    Origin,
    Source,
    audit_entry,
    bind_source,
    reset_source,
    scrub_detail,
)
from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.errors import InvalidArgument, PermissionDenied
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.submit import parse_submit, submit_digest
from agentcall.orbit.domain.tokens import Permission, Principal, authenticate, generate_secret
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory import ManualClock, MemoryStore
from agentcall.orbit.usecases.audit import list_audit, record
from agentcall.orbit.usecases.cancel import cancel_task

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def _tenant(store: MemoryStore, name: str = "ns") -> tuple[Principal, str]:
    secret = generate_secret()
    record_ = await store.init(name, "q", secret)
    return authenticate(record_, T0), secret


async def _submit(store: MemoryStore, principal: Principal, key: str) -> str:
    (queue_id,) = principal.queue_ids
    body = {"queue_id": queue_id, "handler": "h", "handler_version": "v1", "payload": 1}
    request = parse_submit(read_json(json.dumps({**body, "payload_version": "v1"}).encode()))
    scope = Scope(principal.namespace_id, SUBMIT, "", key)
    item = PendingSubmit(principal, request, scope, submit_digest(request), "r-" + key)
    receipt = await store.submit(item)
    return str(json.loads(receipt.task_text)["id"])


async def test_a_console_cancel_records_origin_remote_address_and_request() -> None:
    store = MemoryStore(ManualClock(T0))
    principal, _ = await _tenant(store)
    task_id = await _submit(store, principal, "k1")
    bound = bind_source(Source(Origin.CONSOLE, "203.0.113.7", "req-console"))
    try:
        await cancel_task(store, principal, task_id, CancelRequest(1, "stop"), "c1", "req-1")
    finally:
        reset_source(bound)
    page = await list_audit(store, principal, AuditQuery(principal.namespace_id), None, 10)
    newest = page.items[0]
    assert (newest.action, newest.target_kind, newest.target_id) == (
        "tasks.cancel",
        "task",
        task_id,
    )
    assert (newest.origin, newest.remote_addr, newest.request_id) == (
        Origin.CONSOLE,
        "203.0.113.7",
        "req-1",
    )
    assert newest.actor_token_id == principal.token_id and newest.at is not None
    assert [e.action for e in page.items] == ["tasks.cancel", "tasks.submit"]


async def test_a_failed_write_records_no_audit_line() -> None:
    store = MemoryStore(ManualClock(T0))
    principal, _ = await _tenant(store)
    task_id = await _submit(store, principal, "k1")
    before = list(store.state.audits)
    with pytest.raises(Exception, match="revision"):
        await cancel_task(store, principal, task_id, CancelRequest(7, "x"), "c1", "req-1")
    assert store.state.audits == before


async def test_one_call_records_an_action_without_a_task() -> None:
    store = MemoryStore(ManualClock(T0))
    principal, _ = await _tenant(store)
    bound = bind_source(Source(Origin.CLI, "198.51.100.2", "req-q"))
    try:
        await record(store, principal, "queues.update", "queue", "q1", {"rate_per_s": 10})
    finally:
        reset_source(bound)
    (entry,) = (
        await list_audit(store, principal, AuditQuery(principal.namespace_id), None, 5)
    ).items
    assert (entry.origin, entry.remote_addr, entry.request_id) == (
        Origin.CLI,
        "198.51.100.2",
        "req-q",
    )
    assert entry.detail == {"rate_per_s": 10}


async def test_filters_and_keyset_pages_cover_every_entry_once() -> None:
    clock = ManualClock(T0)
    store = MemoryStore(clock)
    principal, _ = await _tenant(store)
    for n in range(7):
        clock.advance(1000)
        await record(
            store, principal, "queues.update" if n % 2 else "tokens.revoke", "queue", f"t{n}"
        )
    query = AuditQuery(principal.namespace_id, action="queues.update")
    seen, cursor = [], None
    while True:
        page = await list_audit(store, principal, query, cursor, 2)
        seen += [e.target_id for e in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == ["t5", "t3", "t1"]
    target = await list_audit(
        store, principal, AuditQuery(principal.namespace_id, target="t4"), None, 9
    )
    assert [e.target_id for e in target.items] == ["t4"]
    window = AuditQuery(
        principal.namespace_id, since=T0 + timedelta(seconds=2), until=T0 + timedelta(seconds=4)
    )
    assert [e.target_id for e in (await list_audit(store, principal, window, None, 9)).items] == [
        "t2",
        "t1",
    ]
    first = await list_audit(store, principal, query, None, 1)
    assert first.next_cursor is not None
    with pytest.raises(InvalidArgument, match="different audit filters"):
        await list_audit(store, principal, AuditQuery(principal.namespace_id), first.next_cursor, 1)


async def test_reading_needs_audit_read_and_sees_only_its_namespace() -> None:
    store = MemoryStore(ManualClock(T0))
    principal, _ = await _tenant(store, "a")
    other, _ = await _tenant(store, "b")
    await record(store, other, "tokens.revoke", "token", "x")
    assert (
        await list_audit(store, principal, AuditQuery(principal.namespace_id), None, 9)
    ).items == []
    reader = Principal(
        principal.token_id, principal.namespace_id, frozenset({Permission.READ}), frozenset()
    )
    with pytest.raises(PermissionDenied, match="audit:read"):
        await list_audit(store, reader, AuditQuery(principal.namespace_id), None, 9)
    with pytest.raises(PermissionDenied):
        await list_audit(store, principal, AuditQuery(other.namespace_id), None, 9)


def test_secrets_never_reach_an_entry() -> None:
    secret = generate_secret()
    detail = {
        "token": "anything",
        "client_secret": "x",
        "note": f"pasted {secret} by mistake",
        "nested": {"Authorization": "Bearer abc", "list": ["ok", secret]},
        "reason": "plain",
        "token_id": "t" * 26,
        "lease_token": "x",
    }
    scrubbed = scrub_detail(detail)
    assert secret not in json.dumps(scrubbed)
    assert scrubbed == {
        "token": MASK,
        "client_secret": MASK,
        "note": MASK,
        "nested": {"Authorization": MASK, "list": ["ok", MASK]},
        "reason": "plain",
        "token_id": "t" * 26,  # an id names no secret
        "lease_token": MASK,
    }
    principal = Principal("t" * 26, "n" * 26, frozenset(), frozenset())
    entry = audit_entry(principal, "tokens.create", "token", "x", {"secret": secret})
    assert secret not in repr(entry)
