"""OpenTelemetry tracing of one task (docs/orbit/tracing.md), against a real `orbit serve` and
a real `orbit worker`, both exporting over OTLP to an in-process collector: the submit span
continues the caller's traceparent, and lease, attempt, handler and finish follow in one
trace with their parent links; with tracing off nothing is stored nor exported."""

from __future__ import annotations

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
                    json=task_body(tenant, payload={"outcome": "succeed"}),
                    headers={**tenant.headers(key=key), **headers},
                )
                assert response.status_code == 201, response.text
                task_id: str = response.json()["data"]["task"]["id"]
                await wait_state(http, tenant, task_id, {"SUCCEEDED"})
                if "ORBIT_TRACING" in env:  # before the worker stops: its spans are exported
                    await wait_until(_exported(otlp), 15, "the task's spans at the collector")
        await db.close()
    return task_id, tenant


def _exported(otlp: Collector) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return all(otlp.named(n) for n in ("orbit.submit", "orbit.finish", "orbit.handler"))

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
    task_id, _ = await _run_one_task(
        otlp, db_url, tmp_path, monkeypatch, env, traceparent=f"00-{caller_trace}-{caller_span}-01"
    )
    submit, lease = _one(otlp, "orbit.submit"), _one(otlp, "orbit.lease")
    attempt, handler = _one(otlp, "orbit.attempt"), _one(otlp, "orbit.handler")
    finish = _one(otlp, "orbit.finish")
    assert {s.trace_id for s in (submit, lease, attempt, handler, finish)} == {caller_trace}
    assert submit.parent_id == caller_span
    assert lease.parent_id == submit.span_id
    assert attempt.parent_id == lease.span_id
    assert handler.parent_id == attempt.span_id
    assert finish.parent_id == attempt.span_id
    assert (submit.service, handler.service) == ("orbit", "orbit-worker")
    assert lease.attributes["orbit.task.id"] == task_id
    assert handler.attributes["orbit.outcome"] == "succeeded"
    assert finish.attributes["orbit.outcome"] == "succeeded"
    assert attempt.attributes["orbit.attempt.number"] == 1


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
