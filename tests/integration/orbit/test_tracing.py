"""OpenTelemetry tracing of one task (docs/orbit/tracing.md), against a real `orbit serve` and
a real `orbit worker`, both exporting over OTLP to an in-process collector: the submit span
continues the caller's traceparent, and lease, attempt, handler and finish follow in one
trace with their parent links; with tracing off nothing is stored nor exported."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.store.db import Database
from tests.support.orbit_databases import fresh_url
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import WorkerProcess, task_body, wait_state, workers
from tests.support.otlp_collector import Collector, Span, collector
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

SPANS = ["orbit.submit", "orbit.lease", "orbit.attempt", "orbit.handler", "orbit.finish"]
INTERNAL, SERVER, CONSUMER = 1, 2, 5  # OTLP's span kinds
ERROR = 2  # OTLP's status code


@pytest.fixture
def otlp() -> Iterator[Collector]:
    with collector() as running:
        yield running


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    with fresh_url("sqlite", tmp_path, migrated=True) as url:
        yield url


async def _run_one_task(
    otlp: Collector,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    body: dict[str, object] | None = None,
    **headers: str,
) -> tuple[str, Tenant]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # the worker process inherits them
    with execution_server(db_url, tmp_path / "server.log", **env) as url:
        db = Database.open(db_url, pool_size=2)
        tenant = await Tenant.create(db, url)
        worker = WorkerProcess(url, tenant.token, [tenant.queue_id], tmp_path / "worker.log")
        with workers(worker):
            await worker.connected()
            async with httpx.AsyncClient(base_url=url, timeout=30) as http:
                key = secrets.token_hex(8)
                response = await http.post(
                    "/v1/tasks",
                    json=task_body(tenant, **(body or {"payload": {"outcome": "succeed"}})),
                    headers={**tenant.headers(key=key), **headers},
                )
                assert response.status_code == 201, response.text
                task_id: str = response.json()["data"]["task"]["id"]
                await wait_state(http, tenant, task_id, {"SUCCEEDED"})
                if "ORBIT_TRACING" in env:  # before the worker stops: its spans are exported
                    attempts = 2 if body else 1
                    await wait_until(_exported(otlp, attempts), 15, "the task's spans")
        await db.close()
    return task_id, tenant


def _exported(otlp: Collector, attempts: int = 1) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        ends = ("orbit.finish", "orbit.handler")
        return bool(otlp.named("orbit.submit")) and all(
            len(otlp.named(n)) >= attempts for n in ends
        )

    return check


def _settled(otlp: Collector, count: int) -> Callable[[], Awaitable[bool]]:
    """True once `count` spans arrived and none more within a quarter second."""

    async def check() -> bool:
        before = len(otlp.spans)
        await asyncio.sleep(0.25)
        return len(otlp.spans) == before >= count

    return check


def _one(otlp: Collector, name: str) -> Span:
    found = otlp.named(name)
    assert len(found) == 1, (name, found)
    return found[0]


async def test_one_task_is_one_trace_submit_lease_attempt_handler_finish(
    otlp: Collector, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller_trace, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    env = {"ORBIT_TRACING": "1", "ORBIT_WORKER_TRACING": "1", **otlp.environment()}
    task_id, tenant = await _run_one_task(
        otlp, db_url, tmp_path, monkeypatch, env, traceparent=f"00-{caller_trace}-{caller_span}-01"
    )
    await wait_until(_settled(otlp, 5), 5, "no span after the task's five")
    assert sorted(s.name for s in otlp.spans) == sorted(SPANS)
    submit, lease = _one(otlp, "orbit.submit"), _one(otlp, "orbit.lease")
    attempt, handler = _one(otlp, "orbit.attempt"), _one(otlp, "orbit.handler")
    finish = _one(otlp, "orbit.finish")
    assert {s.trace_id for s in (submit, lease, attempt, handler, finish)} == {caller_trace}
    assert submit.parent_id == caller_span
    assert lease.parent_id == submit.span_id
    assert attempt.parent_id == lease.span_id
    assert handler.parent_id == attempt.span_id
    assert finish.parent_id == attempt.span_id
    assert len({s.span_id for s in otlp.spans}) == 5
    assert (submit.service, handler.service) == ("orbit", "orbit-worker")
    assert {s.service for s in (lease, attempt, finish)} == {"orbit"}
    assert [s.kind for s in (submit, lease, attempt, handler, finish)] == [
        SERVER,
        INTERNAL,
        INTERNAL,
        CONSUMER,
        INTERNAL,
    ]
    assert submit.attributes["orbit.queue.id"] == tenant.queue_id
    assert submit.attributes["orbit.handler"] == handler.attributes["orbit.handler"] == "demo.work"
    assert submit.attributes["http.response.status_code"] == 201
    assert lease.attributes["orbit.task.id"] == attempt.attributes["orbit.task.id"] == task_id
    assert lease.attributes["orbit.attempt.id"] == attempt.attributes["orbit.attempt.id"]
    assert handler.attributes["orbit.task.id"] == task_id
    assert handler.attributes["orbit.outcome"] == "succeeded" and handler.status != ERROR
    assert finish.attributes["orbit.outcome"] == attempt.attributes["orbit.outcome"]
    assert finish.attributes["orbit.outcome"] == "succeeded"
    assert finish.attributes["orbit.result.accepted"] is True
    assert attempt.attributes["orbit.attempt.number"] == 1
    assert handler.attributes["orbit.attempt.number"] == 1
    # one after the other: the request, the lease, the handler inside its attempt, the
    # result applied after the handler returned and before the attempt ends
    assert submit.start_ns <= lease.start_ns <= attempt.start_ns <= handler.start_ns
    assert handler.end_ns <= finish.start_ns <= finish.end_ns <= attempt.end_ns
    assert all(s.start_ns <= s.end_ns for s in otlp.spans)


async def test_a_retried_task_has_one_lease_and_attempt_per_attempt_under_its_submit(
    otlp: Collector, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"ORBIT_TRACING": "1", "ORBIT_WORKER_TRACING": "1", **otlp.environment()}
    body: dict[str, object] = {
        "retry": {"max_attempts": 3, "initial_delay_ms": 1},
        "payload": {"outcome": "retryable", "succeed_from_attempt": 2},
    }
    task_id, _ = await _run_one_task(otlp, db_url, tmp_path, monkeypatch, env, body)
    await wait_until(_settled(otlp, 9), 5, "no span after the task's nine")
    submit = _one(otlp, "orbit.submit")
    assert sorted(s.name for s in otlp.spans) == sorted(["orbit.submit", *SPANS[1:] * 2])
    assert {s.trace_id for s in otlp.spans} == {submit.trace_id}
    leases = sorted(otlp.named("orbit.lease"), key=lambda s: s.start_ns)
    assert [s.parent_id for s in leases] == [submit.span_id] * 2
    attempts = sorted(otlp.named("orbit.attempt"), key=lambda s: s.start_ns)
    assert [a.parent_id for a in attempts] == [s.span_id for s in leases]
    assert [a.attributes["orbit.attempt.number"] for a in attempts] == [1, 2]
    assert [a.attributes["orbit.outcome"] for a in attempts] == ["failed", "succeeded"]
    assert attempts[0].end_ns <= leases[1].start_ns
    for attempt in attempts:
        [handler] = [s for s in otlp.named("orbit.handler") if s.parent_id == attempt.span_id]
        [finish] = [s for s in otlp.named("orbit.finish") if s.parent_id == attempt.span_id]
        number = attempt.attributes["orbit.attempt.number"]
        assert handler.attributes["orbit.attempt.number"] == number
        assert handler.attributes["orbit.task.id"] == task_id
        assert finish.attributes["orbit.outcome"] == attempt.attributes["orbit.outcome"]
    failed = next(
        s for s in otlp.named("orbit.handler") if s.attributes["orbit.attempt.number"] == 1
    )
    assert failed.status == ERROR


async def test_an_invalid_traceparent_starts_a_new_trace(
    otlp: Collector, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"ORBIT_TRACING": "1", "ORBIT_WORKER_TRACING": "1", **otlp.environment()}
    hostile = "00-" + "0" * 32 + "-" + "1" * 16 + "-01"  # all-zero trace id: invalid
    await _run_one_task(otlp, db_url, tmp_path, monkeypatch, env, traceparent=hostile)
    submit, handler = _one(otlp, "orbit.submit"), _one(otlp, "orbit.handler")
    assert submit.parent_id == "" and submit.trace_id != "0" * 32
    assert handler.trace_id == submit.trace_id


async def test_tracing_off_exports_nothing_and_stores_no_trace_context(
    otlp: Collector, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"
    env = {"ORBIT_WORKER_TRACING": "1", **otlp.environment()}  # the server's switch is off
    task_id, _ = await _run_one_task(otlp, db_url, tmp_path, monkeypatch, env, traceparent=parent)
    db = Database.open(db_url, pool_size=1)
    try:
        async with db.engine.connect() as conn:
            stored = (
                await conn.execute(
                    sa.text("SELECT trace_parent FROM tasks WHERE id = :id"), {"id": task_id}
                )
            ).scalar_one()
    finally:
        await db.close()
    assert stored is None
    assert otlp.spans == []
