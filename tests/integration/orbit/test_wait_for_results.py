"""Waiting for results: `client.wait` returns within 50 ms of the task's completion (a real
worker runs the tasks), and 200 concurrent long-polls add no database query per waiter: while
they wait, the server runs only the waiters' one shared check (about once a second), counted
with SQLAlchemy's cursor events on the server's own engines."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from sqlalchemy import event

from agentcall.orbit.api.transport import CoalescingHttpToolsProtocol
from agentcall.orbit.assembly.server import create_app
from agentcall.orbit.sdk.client import AsyncClient
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.support.orbit_server import Tenant, execution_server, serve_command, wait_healthy
from tests.support.orbit_workers import WorkerProcess, submit, task_body
from tests.support.ports import free_port
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration]
QUIET_LOAD = 2.0  # 1-minute load average below the 2 cores: every wait must be within 50 ms


async def test_client_wait_returns_within_50_ms_of_completion(
    db_url: str, db: Database, tmp_path: Path
) -> None:
    load_at_start = os.getloadavg()[0]
    with execution_server(db_url, tmp_path / "serve.log") as base:
        tenant = await Tenant.create(db, base)
        worker = WorkerProcess(
            base, tenant.token, [tenant.queue_id], tmp_path / "w.log", concurrency=8
        )
        try:
            await worker.connected()
            async with (
                httpx.AsyncClient(base_url=base, timeout=30) as http,
                AsyncClient(base, tenant.token) as client,
            ):
                warm = await submit(http, tenant, payload={"sleep_ms": 50})
                await client.wait(warm, timeout=20)  # first use of every path: not measured
                ids = [
                    await submit(http, tenant, payload={"sleep_ms": 400 + 50 * i}) for i in range(8)
                ]

                async def wait(task_id: str) -> float:
                    task = await client.wait(task_id, timeout=20)
                    returned = time.time()
                    assert task.state == "SUCCEEDED" and task.completed_at is not None
                    return returned - task.completed_at.timestamp()

                lags = await asyncio.gather(*(wait(task_id) for task_id in ids))
        finally:
            worker.close()
    load = max(load_at_start, os.getloadavg()[0])
    quiet = load < QUIET_LOAD
    print(
        f"client.wait after completion: median {1000 * statistics.median(lags):.1f} ms, "
        f"max {1000 * max(lags):.1f} ms, load average {load:.1f} "
        f"({'quiet: every wait within 50 ms' if quiet else 'loaded: max within 250 ms'})"
    )
    # completed_at is read when the finishing transaction starts: the lag includes its
    # statements and durable commit (several round trips to MariaDB), the wake-up, one read of
    # the task and the HTTP answer; measured step by step in docs/orbit/console.md. Each round
    # trip wakes another process: on a quiet machine that costs well under a millisecond and
    # every wait returns within 50 ms; on this 2-core machine shared with other suites (load
    # 5-12) each hop can wait several milliseconds for a core, so only the median is held to
    # 50 ms there and the slowest to 250 ms (a missed wake-up would show the shared check's
    # ~1 s).
    assert statistics.median(lags) < 0.050, [round(1000 * x, 1) for x in lags]
    assert max(lags) < (0.050 if quiet else 0.250), [round(1000 * x, 1) for x in lags]


async def _batch_of_100(http: httpx.AsyncClient, tenant: Tenant) -> list[str]:
    body = {"tasks": [task_body(tenant) for _ in range(100)]}
    answer = await http.post(
        "/v1/tasks:batch", json=body, headers=tenant.headers(key=secrets.token_hex(8))
    )
    assert answer.status_code == 201, answer.text
    return [item["task_id"] for item in answer.json()["data"]["items"]]


@contextlib.asynccontextmanager
async def _in_process(db: Database) -> AsyncIterator[tuple[str, Any]]:
    """The app under uvicorn in this event loop (as `orbit serve` runs it, with its HTTP
    protocol); starting and stopping are bounded, and the database is closed in any case."""
    app = create_app(db)
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=1,
        http=CoalescingHttpToolsProtocol,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(30):
            while not server.started:
                if task.done():  # e.g. the port was taken meanwhile: its error, not a hang
                    raise AssertionError(f"the server did not start: {task.exception()!r}")
                await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}", app.state.inspection
    finally:
        server.should_exit = True
        try:
            async with asyncio.timeout(20):
                await task
        finally:
            await db.close()


async def test_200_waiters_add_no_database_queries_per_waiter(db_url: str) -> None:
    db = Database.open(db_url, pool_size=8)
    queries: list[float] = []

    def count(*_: Any) -> None:
        queries.append(time.monotonic())

    engines = [db.engine.sync_engine]
    if db._reader is not None:  # noqa: SLF001 - the autocommit reader of MySQL/MariaDB
        engines.append(db._reader.sync_engine)  # noqa: SLF001
    for engine in engines:
        event.listen(engine, "before_cursor_execute", count)
    async with _in_process(db) as (base, inspection):
        made = await Admin(db).init(f"w-{secrets.token_hex(6)}", "main")
        tenant = Tenant(db, base, made.namespace_id, made.queue_id, made.token)
        async with httpx.AsyncClient(
            base_url=base, timeout=30, limits=httpx.Limits(max_connections=250)
        ) as http:
            ids = [task_id for _ in range(2) for task_id in await _batch_of_100(http, tenant)]
            quiet = time.monotonic()
            await asyncio.sleep(3.0)  # the same window without waiters: the upkeep loops only
            idle = len([t for t in queries if t >= quiet])
            polls = [
                asyncio.create_task(
                    http.get(f"/v1/tasks/{task_id}?wait_ms=60000", headers=tenant.headers())
                )
                for task_id in ids
            ]
            deadline = time.monotonic() + 60
            while inspection.waiters.waiting < 200 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert inspection.waiters.waiting == 200
            await asyncio.sleep(1.5)  # each waiter's one read of its task is done
            began, checks_before = time.monotonic(), inspection.waiters.checks
            await asyncio.sleep(3.0)
            window = [t for t in queries if t >= began]
            checks = inspection.waiters.checks - checks_before
            still = inspection.waiters.waiting
            for poll in polls:
                poll.cancel()
            await asyncio.gather(*polls, return_exceptions=True)
            # their clients are gone: the server ends those waits now, not after wait_ms
            await wait_until(_no_waiter(inspection), 10, "the abandoned long-polls to end")
    for engine in engines:
        event.remove(engine, "before_cursor_execute", count)
    assert still == 200  # nobody's wait ended early
    added = len(window) - idle
    print(
        f"3 s without waiters: {idle} queries; 3 s with 200 waiters: {len(window)} "
        f"({checks} shared checks): {added / 3.0 / 200:.4f} added per waiter per second"
    )
    # the shared check names all 200 tasks in one query (with its BEGIN and COMMIT on
    # SQLite), about once a second; the upkeep loops run their own queries whoever waits (the
    # window without waiters counts them, give or take one of their rounds)
    assert 2 <= checks <= 4
    assert added <= 3 * checks + 6, (idle, len(window), checks)  # 200 waiters: not 600+


def _no_waiter(inspection: Any) -> Callable[[], Awaitable[bool]]:
    async def none_left() -> bool:
        return bool(inspection.waiters.waiting == 0)

    return none_left


async def test_sigterm_answers_waiting_long_polls_and_stops_at_once(
    db_url: str, db: Database, tmp_path: Path
) -> None:
    """A graceful stop with 100 long-polls waiting: each is answered (200, the task as last
    read) as the stop begins, and `orbit serve` exits well within its 10 s graceful timeout
    instead of holding on for them and then cancelling them mid-query."""
    port = free_port()
    command = serve_command(db_url, port, "--no-access-log")
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, process, log_path)
        tenant = await Tenant.create(db, base)
        async with httpx.AsyncClient(
            base_url=base, timeout=30, limits=httpx.Limits(max_connections=150)
        ) as http:
            ids = await _batch_of_100(http, tenant)
            polls = [
                asyncio.create_task(
                    http.get(f"/v1/tasks/{task_id}?wait_ms=60000", headers=tenant.headers())
                )
                for task_id in ids
            ]

            async def all_waiting() -> bool:
                metrics = (await http.get("/metrics")).text
                return "\norbit_result_waiters 100.0" in metrics

            await wait_until(all_waiting, 60, "100 long-polls to wait")
            assert not any(poll.done() for poll in polls)
            stopped = time.monotonic()
            process.send_signal(signal.SIGTERM)
            answers = await asyncio.gather(*polls)
            answered = time.monotonic() - stopped
            exit_code = await asyncio.to_thread(process.wait, 15)
            exited = time.monotonic() - stopped
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    print(
        f"SIGTERM with 100 long-polls: answered after {answered:.2f} s, exit after "
        f"{exited:.2f} s (load average {os.getloadavg()[0]:.1f})"
    )
    assert [a.status_code for a in answers] == [200] * 100
    assert {a.json()["data"]["state"] for a in answers} == {"WAITING"}
    # uvicorn re-raises the signal it handled once its graceful stop is done
    assert exit_code in (0, -signal.SIGTERM), log_path.read_text()[-2000:]
    assert exited < 5.0, (answered, exited)  # the graceful timeout (10 s) never ran out
    assert "timeout graceful shutdown exceeded" not in log_path.read_text()
