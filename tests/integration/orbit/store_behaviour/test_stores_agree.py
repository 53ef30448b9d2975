"""One scripted run of submits, leases, starts, heartbeats, results, expiries, retries,
cancels, operator retries and resolutions on a real database and on the in-memory twin:
everything a caller can observe (statuses, acks, task states and revisions, error codes,
evidence keys, the event journal), with ids and times left out, is the same list on both."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.errors import OrbitError
from agentcall.orbit.domain.evidence import WorkerError
from agentcall.orbit.domain.review import parse_resolve, parse_retry
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.execution.acks import Ack, Peer
from agentcall.orbit.protocol.messages import ResultOutcome
from agentcall.orbit.store.db import Database
from tests.integration.orbit.store_behaviour.backends import (
    SETTINGS,
    Backend,
    new_key,
    ref_of,
    result_of,
    submit_body,
    worker_peer,
)
from tests.integration.orbit.store_behaviour.memory_backend import MemoryBackend
from tests.integration.orbit.store_behaviour.sql_backend import SqlBackend

pytestmark = pytest.mark.integration

Trace = list[Any]


def _ack(ack: Ack) -> tuple[Any, ...]:
    fields = {k: v for k, v in ack.fields.items() if k not in ("attempt_id", "lease_expires_at")}
    return (ack.ok, ack.code, sorted(fields.items()))


async def _refusal(call: Any) -> str:
    try:
        await call
    except OrbitError as exc:
        return type(exc).__name__
    return "accepted"


async def _script(backend: Backend) -> Trace:
    trace: Trace = []
    principal = await backend.tenant()
    peer = worker_peer(principal)
    key = new_key()
    first = await backend.submit(principal, submit_body(principal), key)
    again = await backend.submit(principal, submit_body(principal), key)
    other = submit_body(principal, payload={"n": 2})
    trace += [first.status, again.status, again.task_text == first.task_text]
    trace.append(await _refusal(backend.submit(principal, other, key)))
    retry = {"max_attempts": 2, "initial_delay_ms": 1, "max_delay_ms": 1}
    idempotent = submit_body(principal, recovery_safety="IDEMPOTENT", retry=retry, payload=3)
    await backend.submit(principal, idempotent, new_key())
    grants = await backend.lease(peer, 5)
    trace.append([grant.number for grant in grants])
    for grant in grants:
        trace.append(_ack(await backend.start(peer, ref_of(grant))))
    backend.advance(10_000)
    trace.append([s["status"] for s in await backend.heartbeat(peer, [ref_of(grants[0])])])
    backend.advance(6_000)  # the second lease ran out, the first was renewed
    report = await backend.sweep()
    mine = {grant.attempt_id for grant in grants}
    trace.append(sorted(why for _, attempt, why in report.cancels if attempt in mine))
    (retried,) = await backend.lease(peer, 5)
    trace.append(retried.number)
    trace.append(_ack(await backend.start(peer, ref_of(retried))))
    error = WorkerError("E", "again", True)
    failed = result_of(retried, ResultOutcome.FAILED, error=error)
    trace.append(_ack(await backend.finish(peer, failed)))
    trace.append(_ack(await backend.finish(peer, failed)))  # resent
    trace.append(_ack(await backend.finish(peer, result_of(grants[0]))))
    cancelled = await backend.submit(principal, submit_body(principal, payload=4), new_key())
    task_id = json.loads(cancelled.task_text)["id"]
    cancel_key = new_key()
    for revision in (1, 1):
        written = await backend.cancel(principal, task_id, CancelRequest(revision, "r"), cancel_key)
        trace.append((written.deduplicated, json.loads(written.task_text)["revision"]))
    stale = backend.cancel(principal, task_id, CancelRequest(2, "r"), new_key())
    trace.append(await _refusal(stale))
    trace += await _reviews(backend, principal, peer)
    page = await backend.page(principal, None, None, 10)
    for item in page.items:
        task = await backend.get(principal, item.id)
        events = [
            (e.revision, e.kind, e.from_state, e.to_state) for e in await backend.events(item.id)
        ]
        trace.append((task.state.value, task.revision, task.attempt_count, task.error_code, events))
    return trace


async def _reviews(backend: Backend, principal: Principal, peer: Peer) -> Trace:
    """A FAILED task retried and a NEEDS_REVIEW one resolved with evidence, each replayed
    under its key and refused at a stale revision."""
    trace: Trace = []
    for payload in (5, 6):
        await backend.submit(principal, submit_body(principal, payload=payload), new_key())
    failed, unsure = await backend.lease(peer, 2)
    for grant in (failed, unsure):
        trace.append(_ack(await backend.start(peer, ref_of(grant))))
    no = WorkerError("E_NO", "no", False)
    trace.append(
        _ack(await backend.finish(peer, result_of(failed, ResultOutcome.FAILED, error=no)))
    )
    review = result_of(unsure, ResultOutcome.NEEDS_REVIEW, error=WorkerError("E_UNSURE", "?", None))
    trace.append(_ack(await backend.finish(peer, review)))
    retry = parse_retry({"expected_revision": "4", "reason": "again"})
    note = {"key": "log", "kind": "note", "data": "seen"}
    body = {"expected_revision": "4", "reason": "ok", "outcome": "succeeded", "result": 7}
    resolve = parse_resolve({**body, "evidence": [note]})
    key, other = new_key(), new_key()
    for _ in range(2):
        retried = await backend.retry(principal, failed.task.id, retry, key)
        resolved = await backend.resolve(principal, unsure.task.id, resolve, other)
        trace += [(w.deduplicated, *_seen(w.task_text)) for w in (retried, resolved)]
    trace.append(await _refusal(backend.retry(principal, failed.task.id, retry, new_key())))
    trace.append(await _refusal(backend.resolve(principal, unsure.task.id, resolve, new_key())))
    trace.append(await backend.evidence_keys(unsure.attempt_id))
    return trace


def _seen(task_text: str) -> tuple[Any, ...]:
    """What a receipt's task shows that is the same on every run (no ids, no times)."""
    view = json.loads(task_text)
    return view["state"], view["revision"], view["retry"]["max_attempts"], view.get("result")


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)])
def database(request: pytest.FixtureRequest) -> tuple[str, str]:
    """A real database of the session: its kind and URL."""
    return request.param, request.getfixturevalue(f"{request.param}_url")


async def test_a_database_and_the_twin_give_the_same_trace(database: tuple[str, str]) -> None:
    kind, url = database
    sql = SqlBackend(kind, Database.open(url, pool_size=2), SETTINGS)
    try:
        on_database = await _script(sql)
    finally:
        await sql.close()
    on_twin = await _script(MemoryBackend(SETTINGS))
    assert on_database == on_twin
    assert len(on_database) == 33  # the script ran to its end
