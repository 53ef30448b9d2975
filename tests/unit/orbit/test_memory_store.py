"""The in-memory store twin (agentcall.orbit.store.memory) keeps the semantics of the typed
store interface (agentcall.orbit.store.ports), so that a unit test over it means something:
the injected clock, rollback of a failed transaction, writes conditional on the state and
revision read, idempotency by digest (O-SUB-1), eligibility as the pure rule says, leases
renewed only while current. The behaviour suite (tests/integration/orbit/store_behaviour)
checks that the twin, SQLite and MariaDB agree on the use cases."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentcall.orbit.domain.attempts import AttemptState, EndReason, Outcome, TaskErrorCode
from agentcall.orbit.domain.errors import IdempotencyConflict, IllegalTransition, InvalidArgument
from agentcall.orbit.domain.evidence import EvidenceItem, EvidenceKind
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.leasing import HandlerKey, LeaseCandidate, WorkerOffer, is_eligible
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import OPERATION, parse_submit, submit_digest
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Principal, authenticate, generate_secret, hash_secret
from agentcall.orbit.domain.transitions import EndWrite, StartWrite
from agentcall.orbit.domain.worker_errors import EvidenceConflict, EvidenceLimit
from agentcall.orbit.execution.acks import Peer
from agentcall.orbit.execution.kernel import Kernel, KernelSettings
from agentcall.orbit.protocol.messages import WorkerIdentity
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory import ManualClock, MemoryStore, MemoryWrites
from agentcall.orbit.store.ports import (
    AttemptTransaction,
    LiveAttempt,
    OperatorTransaction,
    TaskStore,
)
from agentcall.orbit.store.sql import ConcurrentChange

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)
HANDLER = HandlerKey("demo.work", "v1")


def _bind(tx: Any) -> AttemptTransaction:
    assert isinstance(tx, MemoryWrites)
    return tx


KERNEL = Kernel(KernelSettings(), _bind)


async def _tenant(store: MemoryStore) -> Principal:
    record = await store.init(f"ns-{len(store.state.namespaces)}", "q", generate_secret())
    return authenticate(record, T0)


def _pending(principal: Principal, key: str, **fields: Any) -> PendingSubmit:
    (queue_id,) = principal.queue_ids
    body = {
        "queue_id": queue_id,
        "handler": HANDLER.handler,
        "handler_version": HANDLER.handler_version,
        "payload_version": "v1",
        "payload": {"n": 1},
        **fields,
    }
    request = parse_submit(read_json(json.dumps(body).encode()))
    scope = Scope(principal.namespace_id, OPERATION, "", key)
    return PendingSubmit(principal, request, scope, submit_digest(request), "request")


def _peer(principal: Principal) -> Peer:
    worker = WorkerIdentity("w", "i" * 32, "sdk", "host", 1)
    return Peer("conn-1", principal.token_id, principal.namespace_id, principal.queue_ids, worker)


async def _submitted(store: MemoryStore, principal: Principal, key: str = "k1") -> Task:
    receipt = await store.submit(_pending(principal, key))
    task = await store.load_task(json.loads(receipt.task_text)["id"])
    assert task is not None
    return task


async def _leased(store: MemoryStore) -> tuple[Principal, Task, LiveAttempt]:
    principal = await _tenant(store)
    task = await _submitted(store, principal)
    async with store.transaction() as (tx, now):
        (grant,) = await KERNEL.lease(tx, now, _peer(principal), [HANDLER], task.queue_id, 1)
        live = (await tx.load_attempts([grant.attempt_id]))[grant.attempt_id]
    return principal, task, live


# ---------------------------------------------------------------------- clock and transactions
async def test_a_transaction_reads_the_injected_clock() -> None:
    clock = ManualClock(T0)
    store = MemoryStore(clock)
    async with store.transaction() as (_, first):
        pass
    clock.advance(5_000)
    async with store.transaction() as (_, second):
        pass
    assert T0 < first < T0 + S
    assert T0 + 5 * S < second < T0 + 6 * S


async def test_a_clock_without_a_time_zone_is_refused() -> None:
    store = MemoryStore(lambda: datetime(2026, 1, 1))  # noqa: DTZ001 - the point of the test
    with pytest.raises(ValueError, match="aware UTC"):
        async with store.transaction():
            pass


async def test_a_failed_transaction_writes_nothing() -> None:
    store = MemoryStore(ManualClock(T0))
    principal, task, live = await _leased(store)
    with pytest.raises(RuntimeError):
        async with store.transaction() as (tx, now):
            await tx.write_starts(now, [StartWrite(live, now + 15 * S)])
            raise RuntimeError("the transaction fails after its writes")
    stored = await store.load_task(task.id)
    assert stored is not None and (stored.state, stored.revision) == (TaskState.LEASED, 2)
    assert store.attempt(live.id) is not None
    assert (store.attempt(live.id) or {})["state"] == "LEASED"
    assert [row["kind"] for row in store.events(task.id)] == ["ACCEPTED", "LEASED"]


# ---------------------------------------------------------------------- conditional writes
async def test_a_start_of_an_attempt_no_longer_leased_is_a_concurrent_change() -> None:
    store = MemoryStore(ManualClock(T0))
    _, task, live = await _leased(store)
    async with store.transaction() as (tx, now):
        await tx.write_starts(now, [StartWrite(live, now + 15 * S)])
    with pytest.raises(ConcurrentChange):
        async with store.transaction() as (tx, now):
            await tx.write_starts(now, [StartWrite(live, now + 15 * S)])  # as read before
    stored = await store.load_task(task.id)
    assert stored is not None and (stored.state, stored.attempt_count) == (TaskState.RUNNING, 1)


@pytest.mark.parametrize("stale", ["attempt state", "task revision"])
async def test_an_end_decided_on_a_stale_read_writes_nothing(stale: str) -> None:
    store = MemoryStore(ManualClock(T0))
    _, task, live = await _leased(store)
    read = live if stale == "attempt state" else replace(live, task_revision=1)
    if stale == "attempt state":
        async with store.transaction() as (tx, now):
            await tx.write_starts(now, [StartWrite(live, now + 15 * S)])
    outcome = Outcome(TaskState.WAITING, AttemptState.LOST, EndReason.LEASE_EXPIRED)
    before = await store.load_task(task.id)
    with pytest.raises(ConcurrentChange):
        async with store.transaction() as (tx, now):
            await tx.write_ends(now, [EndWrite(read, replace(outcome, available_at=now))])
    assert await store.load_task(task.id) == before


async def test_an_end_the_state_machine_forbids_is_refused() -> None:
    store = MemoryStore(ManualClock(T0))
    _, task, live = await _leased(store)
    done = replace(live, task_state=TaskState.SUCCEEDED)
    outcome = Outcome(TaskState.RUNNING, AttemptState.RUNNING, EndReason.RESULT)
    with pytest.raises(IllegalTransition):
        async with store.transaction() as (tx, now):
            await tx.write_ends(now, [EndWrite(done, outcome)])


async def test_one_event_per_task_revision() -> None:
    store = MemoryStore(ManualClock(T0))
    task = await _submitted(store, await _tenant(store))
    (accepted,) = store.events(task.id)
    with pytest.raises(ConcurrentChange):
        async with store.transaction() as (tx, _):
            await tx.append_event({**accepted, "id": "another"})


async def test_a_waiting_task_fails_only_at_the_revision_read() -> None:
    clock = ManualClock(T0)
    store = MemoryStore(clock)
    principal = await _tenant(store)
    start = (T0 + 10 * S).strftime("%Y-%m-%dT%H:%M:%SZ")
    receipt = await store.submit(_pending(principal, "k", start_deadline_at=start))
    task_id = json.loads(receipt.task_text)["id"]
    clock.advance(11_000)
    async with store.transaction() as (tx, now):
        (late,) = await tx.expired_waiting(now, 10)
        code = TaskErrorCode.START_DEADLINE_EXCEEDED
        assert await tx.fail_waiting(now, replace(late, revision=7), code) is False
        assert await tx.fail_waiting(now, late, code) is True
        assert await tx.fail_waiting(now, late, code) is False  # not WAITING any more
    failed = await store.load_task(task_id)
    assert failed is not None and (failed.state, failed.revision) == (TaskState.FAILED, 2)
    assert failed.error_code == "START_DEADLINE_EXCEEDED" and failed.completed_at is not None


# ---------------------------------------------------------------------- submit (O-SUB-1)
async def test_submit_replays_by_digest_and_refuses_other_content() -> None:
    store = MemoryStore(ManualClock(T0))
    principal = await _tenant(store)
    first = await store.submit(_pending(principal, "k"))
    again = await store.submit(_pending(principal, "k", payload={"n": 1.0}))
    assert (first.status, again.status, again.deduplicated) == (201, 200, True)
    assert again.task_text == first.task_text
    with pytest.raises(IdempotencyConflict):
        await store.submit(_pending(principal, "k", payload={"n": 2}))
    assert len(store.state.tasks) == 1 and len(store.state.audits) == 1


async def test_a_refused_submit_keeps_no_record() -> None:
    """O-NOTE-6: nothing is stored for a request the clock refuses."""
    store = MemoryStore(ManualClock(T0))
    principal = await _tenant(store)
    with pytest.raises(InvalidArgument):
        await store.submit(_pending(principal, "k", start_deadline_at="2001-01-01T00:00:00Z"))
    assert store.state.receipts == {} and store.state.tasks == {} and store.state.events == {}


async def test_tokens_are_found_by_the_digest_of_their_secret() -> None:
    store = MemoryStore(ManualClock(T0))
    record = await store.init("ns", "q", "secret-one")
    assert await store.load_token(hash_secret("secret-one")) == record
    assert await store.load_token(hash_secret("secret-two")) is None
    with pytest.raises(InvalidArgument):
        await store.init("ns", "other", "secret-three")


# ---------------------------------------------------------------------- leasing
def _variants(task: Task, other_queue: str) -> list[Task]:
    """Every combination of the fields the eligibility rule reads."""
    now = T0 + 60 * S
    made = []
    for n, (state, queue, handler, available, deadline, start, count) in enumerate(
        itertools.product(
            (TaskState.WAITING, TaskState.LEASED),
            (task.queue_id, other_queue),
            (("demo.work", "v1"), ("demo.work", "v2")),
            (now - S, now, now + S),
            (now, now + 60 * S),
            (None, now, now + 10 * S),
            (0, 1),
        )
    ):
        made.append(
            replace(
                task,
                id=f"{n:032x}",
                state=state,
                queue_id=queue,
                handler=handler[0],
                handler_version=handler[1],
                available_at=available,
                deadline_at=deadline,
                start_deadline_at=start,
                attempt_count=count,
            )
        )
    return made


async def test_lease_candidates_are_exactly_what_the_pure_rule_accepts() -> None:
    store = MemoryStore(ManualClock(T0))
    principal = await _tenant(store)
    template = await _submitted(store, principal)
    variants = _variants(template, "f" * 32)
    store.state.tasks = {task.id: task for task in variants}
    now = T0 + 60 * S
    async with store.transaction() as (tx, _):
        found = await tx.lease_candidates(template.queue_id, [HANDLER], now, 10_000)
    offer = WorkerOffer(frozenset({template.queue_id}), frozenset({HANDLER}))
    expected = [
        task.id
        for task in sorted(variants, key=lambda t: (t.available_at, t.id))
        if is_eligible(_candidate(task), offer, now)
    ]
    assert expected and len(expected) < len(variants)
    assert [leasable.task.id for leasable in found] == expected


def _candidate(task: Task) -> LeaseCandidate:
    key = HandlerKey(task.handler, task.handler_version)
    return LeaseCandidate(
        task.state,
        task.queue_id,
        key,
        task.available_at,
        task.start_deadline_at,
        task.deadline_at,
        task.attempt_count,
        task.retry.max_attempts,
    )


async def test_the_clocked_read_needs_no_clock_when_nothing_matches() -> None:
    store = MemoryStore(ManualClock(T0))
    principal = await _tenant(store)
    (queue_id,) = principal.queue_ids
    async with store.transaction() as (tx, _):
        assert await tx.clocked_lease_candidates(queue_id, [HANDLER], 5) == (None, [])
    task = await _submitted(store, principal)
    async with store.transaction() as (tx, begun):
        clock, found = await tx.clocked_lease_candidates(queue_id, [HANDLER], 5)
    assert clock is not None and clock > begun and [f.task.id for f in found] == [task.id]


async def test_the_clocked_attempt_read_needs_no_clock_when_none_exists() -> None:
    store = MemoryStore(ManualClock(T0))
    _, _, live = await _leased(store)
    async with store.transaction() as (tx, _):
        assert await tx.clocked_load_attempts(["f" * 32]) == (None, {})
    async with store.transaction() as (tx, begun):
        clock, found = await tx.clocked_load_attempts([live.id, "f" * 32])
    assert clock is not None and clock > begun and list(found) == [live.id]


async def test_the_lease_count_numbers_the_next_attempt() -> None:
    store = MemoryStore(ManualClock(T0))
    _, task, live = await _leased(store)
    assert live.number == 1 and store.state.lease_counts[task.id] == 1


# ---------------------------------------------------------------------- leases
async def test_a_renewed_lease_ends_at_the_attempt_deadline_at_the_latest() -> None:
    store = MemoryStore(ManualClock(T0))
    _, _, live = await _leased(store)
    async with store.transaction() as (tx, now):
        await tx.renew_leases([live.id], now, now + 3600 * S, rebind_to="conn-2")
    row = store.attempt(live.id) or {}
    assert row["lease_expires_at"] == live.attempt_deadline_at
    assert row["connection_id"] == "conn-2"


async def test_a_lease_that_ran_out_is_not_renewed() -> None:
    """The attempt may be ended by the sweeper any moment: a late heartbeat revives nothing."""
    clock = ManualClock(T0)
    store = MemoryStore(clock)
    _, _, live = await _leased(store)
    clock.advance(16_000)  # past the lease (15 s), before the attempt deadline (30 s)
    async with store.transaction() as (tx, now):
        await tx.renew_leases([live.id], now, now + 15 * S)
        (expired,) = await tx.expired_attempts(now, 10)
    assert expired.id == live.id
    assert (store.attempt(live.id) or {})["lease_expires_at"] == live.lease_expires_at


async def test_a_closed_connection_shortens_only_its_own_later_leases() -> None:
    store = MemoryStore(ManualClock(T0))
    _, _, live = await _leased(store)
    async with store.transaction() as (tx, now):
        await tx.shorten_leases("another-connection", now)
        await tx.shorten_leases(live.connection_id, live.lease_expires_at + S)  # later: kept
    assert (store.attempt(live.id) or {})["lease_expires_at"] == live.lease_expires_at
    async with store.transaction() as (tx, now):
        await tx.shorten_leases(live.connection_id, now + 5 * S)
        (expired,) = await tx.expired_attempts(now + 5 * S, 10)
    assert expired.id == live.id


# ---------------------------------------------------------------------- evidence, offers
def _item(key: str, data: str = '{"a":1}') -> EvidenceItem:
    return EvidenceItem(key, EvidenceKind.REFERENCE, None, None, None, None, None, data)


async def test_evidence_is_idempotent_per_key_and_limited() -> None:
    store = MemoryStore(ManualClock(T0))
    _, _, live = await _leased(store)
    async with store.transaction() as (tx, now):
        fresh = await tx.check_evidence(live, [_item("a"), _item("b")])
        await tx.insert_evidence(live, fresh, now)
    async with store.transaction() as (tx, now):
        again = (await tx.load_attempts([live.id]))[live.id]
        assert again.evidence_count == 2
        assert await tx.check_evidence(again, [_item("a"), _item("c")]) == [_item("c")]
        with pytest.raises(EvidenceConflict):
            await tx.check_evidence(again, [_item("a", '{"a":2}')])
        with pytest.raises(EvidenceLimit):
            await tx.check_evidence(again, [_item(f"k{n}") for n in range(99)])


async def test_an_offer_is_withdrawn_once_and_never_after_a_claim() -> None:
    store = MemoryStore(ManualClock(T0))
    mine, claimed = store.open_offer("n", "q"), store.open_offer("n", "q")
    store.claim_offer(claimed, "t" * 32)
    async with store.transaction() as (tx, _):
        assert await tx.withdraw_offer(mine) is True
        assert await tx.withdraw_offer(mine) is False
        assert await tx.withdraw_offer(claimed) is False
        assert await tx.withdraw_offer("unknown") is False


# ---------------------------------------------------------------------- the port, whole
def _missing(port: type, twin: type) -> set[str]:
    """Operations of the port that the twin does not have."""
    wanted = {name for name in vars(port) if not name.startswith("_")}
    return {name for name in wanted if not callable(getattr(twin, name, None))}


@pytest.mark.parametrize(
    ("port", "twin"),
    [
        (TaskStore, MemoryStore),
        (AttemptTransaction, MemoryWrites),
        (OperatorTransaction, MemoryWrites),
    ],
)
def test_the_twin_has_every_operation_of_the_port(port: type, twin: type) -> None:
    """When the port grows, the twin grows with it (mypy checks the signatures too)."""
    assert _missing(port, twin) == set()


def test_the_port_check_finds_a_missing_operation() -> None:
    class Partial:
        async def load_task(self, task_id: str) -> None: ...

    assert _missing(TaskStore, Partial) == {
        "transaction",
        "submit",
        "operator_write",
        "page",
        "load_token",
        "record_audit",
        "audit_page",
    }
