"""The worker use cases (agentcall.orbit.usecases: lease, start, finish, heartbeat, evidence)
and the kernel's batches, run by the product's engine over the in-memory store twin: what a
worker connection sees, and what the store holds afterwards (worker-protocol.md §3-§5)."""

from __future__ import annotations

import asyncio

import pytest

from agentcall.orbit.domain.evidence import EvidenceItem, EvidenceKind
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.times import milliseconds
from agentcall.orbit.execution.kernel import LeaseAsk
from agentcall.orbit.protocol.messages import (
    AttemptRef,
    Evidence,
    Heartbeat,
    Result,
    ResultOutcome,
)
from agentcall.orbit.usecases import finish, heartbeat, lease, start
from tests.support.orbit_twin import HANDLER, TwinOrbit, twin_orbit

pytestmark = pytest.mark.unit


async def _settled() -> None:
    """The twin does no I/O: what a wake starts is over within a few loop turns."""
    for _ in range(50):
        await asyncio.sleep(0)


def _ref(message: dict[str, object]) -> AttemptRef:
    attempt = message["attempt"]
    assert isinstance(attempt, dict)
    return AttemptRef(attempt["id"], attempt["lease_token"])


async def _leased_to_a_worker(orbit: TwinOrbit) -> tuple[str, AttemptRef]:
    """One task submitted, pushed by the running hub to a connection of capacity 1."""
    (task_id,) = await orbit.stock("q", 1)
    link = orbit.link(("q",), 1)
    lease.open_link(orbit.hub, link, set())
    orbit.hub.start()
    await _settled()
    await orbit.hub.stop()
    (message,) = orbit.sent
    assert message["type"] == "lease"
    return task_id, _ref(message)


async def test_a_worker_runs_a_task_through_the_use_cases() -> None:
    orbit = await twin_orbit(("q",))
    task_id, ref = await _leased_to_a_worker(orbit)
    (link,) = orbit.hub.links.values()
    assert link.in_flight == {ref.attempt_id}
    started = await start.start(orbit.hub, link.peer, ref)
    assert started.ok and started.fields["task_state"] == "RUNNING"
    done = await finish.finish(
        orbit.hub, link.peer, Result("m1", ref, ResultOutcome.SUCCEEDED, '{"ok":1}', None, ())
    )
    assert done.ok and done.ended == ref.attempt_id
    task = await orbit.store.load_task(task_id)
    assert task is not None and (task.state, task.revision) == (TaskState.SUCCEEDED, 4)
    assert task.result_text == '{"ok":1}'
    kinds = [row["kind"] for row in orbit.store.events(task_id)]
    assert kinds == ["ACCEPTED", "LEASED", "STARTED", "SUCCEEDED"]


async def test_a_heartbeat_with_a_stale_token_frees_the_connections_slot() -> None:
    orbit = await twin_orbit(("q",))
    _, ref = await _leased_to_a_worker(orbit)
    (link,) = orbit.hub.links.values()
    stale = AttemptRef(ref.attempt_id, "0" * 32)
    (status,) = await heartbeat.heartbeat(orbit.hub, link.peer, Heartbeat("h1", (stale,)))
    assert status == {"attempt_id": ref.attempt_id, "status": "lost"}
    assert link.in_flight == set()  # the connection no longer counts it
    attempt = orbit.store.attempt(ref.attempt_id)
    assert attempt is not None and attempt["state"] == "LEASED"  # the lease itself is untouched


async def test_a_heartbeat_renews_the_lease_in_the_store() -> None:
    orbit = await twin_orbit(("q",))
    _, ref = await _leased_to_a_worker(orbit)
    (link,) = orbit.hub.links.values()
    await start.start(orbit.hub, link.peer, ref)
    orbit.clock.advance(10_000)
    (status,) = await heartbeat.heartbeat(orbit.hub, link.peer, Heartbeat("h1", (ref,)))
    assert status["status"] == "ok"
    attempt = orbit.store.attempt(ref.attempt_id) or {}
    assert attempt["last_heartbeat_at"] > attempt["started_at"]
    assert attempt["lease_expires_at"] == attempt["last_heartbeat_at"] + milliseconds(15_000)


async def test_a_closed_connection_keeps_its_lease_for_the_reconnect_grace() -> None:
    orbit = await twin_orbit(("q",))
    _, ref = await _leased_to_a_worker(orbit)
    (link,) = orbit.hub.links.values()
    before = (orbit.store.attempt(ref.attempt_id) or {})["lease_expires_at"]
    await lease.close_link(orbit.hub, link)
    after = (orbit.store.attempt(ref.attempt_id) or {})["lease_expires_at"]
    assert after < before and orbit.hub.links == {}
    assert after - orbit.clock.at <= milliseconds(5_000)


async def test_evidence_is_recorded_on_a_running_attempt_only() -> None:
    orbit = await twin_orbit(("q",))
    _, ref = await _leased_to_a_worker(orbit)
    (link,) = orbit.hub.links.values()
    item = EvidenceItem("receipt", EvidenceKind.REFERENCE, None, "s3://b/k", None, None, None, None)
    early = await finish.record_evidence(orbit.hub, link.peer, Evidence("e1", ref, (item,)))
    assert (early.ok, early.code) == (False, "INVALID_MESSAGE")
    await start.start(orbit.hub, link.peer, ref)
    recorded = await finish.record_evidence(orbit.hub, link.peer, Evidence("e2", ref, (item,)))
    again = await finish.record_evidence(orbit.hub, link.peer, Evidence("e3", ref, (item,)))
    assert (recorded.fields["recorded"], again.fields["recorded"]) == (1, 0)
    assert (orbit.store.attempt(ref.attempt_id) or {})["evidence_count"] == 1


async def test_one_lease_batch_deals_every_row_once_over_overlapping_handler_sets() -> None:
    """Two connections whose handler sets overlap, asking in one batch: no task twice."""
    orbit = await twin_orbit(("q",))
    ids = await orbit.stock("q", 5)
    other = HandlerKey("demo.other", "v1")
    asks = [
        LeaseAsk(orbit.peer(("q",), "a"), frozenset({HANDLER}), orbit.queues["q"], 3),
        LeaseAsk(orbit.peer(("q",), "b"), frozenset({HANDLER, other}), orbit.queues["q"], 3),
    ]
    async with orbit.store.transaction() as (tx, now):
        grants = await orbit.kernel.lease_many(tx, now, asks)
    leased = [grant.task.id for mine in grants for grant in mine]
    assert sorted(leased) == sorted(ids) and len(grants[0]) == 3 and len(grants[1]) == 2


async def test_an_ask_whose_offer_was_claimed_leases_nothing() -> None:
    """The connection's only free slot went to another process's submit meanwhile."""
    orbit = await twin_orbit(("q",))
    (task_id,) = await orbit.stock("q", 1)
    offer_id = orbit.store.open_offer(orbit.principal.namespace_id, orbit.queues["q"])
    orbit.store.claim_offer(offer_id, "f" * 32)
    ask = LeaseAsk(orbit.peer(("q",)), frozenset({HANDLER}), orbit.queues["q"], 1, offer_id)
    async with orbit.store.transaction() as (tx, now):
        (grants,) = await orbit.kernel.lease_many(tx, now, [ask])
    assert grants == []
    task = await orbit.store.load_task(task_id)
    assert task is not None and (task.state, task.revision) == (TaskState.WAITING, 1)


async def test_a_clocked_lease_round_that_finds_nothing_writes_nothing() -> None:
    orbit = await twin_orbit(("q",))
    ask = LeaseAsk(orbit.peer(("q",)), frozenset({HANDLER}), orbit.queues["q"], 4)
    async with orbit.store.transaction() as (tx, _):
        assert await orbit.kernel.lease_clocked(tx, [ask]) == [[]]
    (task_id,) = await orbit.stock("q", 1)
    async with orbit.store.transaction() as (tx, begun):
        ((grant,),) = await orbit.kernel.lease_clocked(tx, [ask])
    assert grant.task.id == task_id and grant.leased_at > begun  # the statement's clock
