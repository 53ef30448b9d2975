"""Acceptance: a retry storm (1,000 always-failing retryable tasks, real worker process)
on SQLite and MariaDB. Every retry waits at least the backoff floor after the previous attempt
ended, no attempt starts at or past its task's deadline, and every task ends FAILED with
ATTEMPTS_EXHAUSTED or DEADLINE_EXCEEDED. ORBIT_STORM_TASKS overrides the count."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.backoff import floor_ms
from agentcall.orbit.domain.submit import RetryPolicy
from agentcall.orbit.store.db import Database
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import WorkerProcess, attempts, submit, wait_state, workers

pytestmark = pytest.mark.integration
TASKS = int(os.environ.get("ORBIT_STORM_TASKS", "1000"))
RETRY = {"max_attempts": 4, "initial_delay_ms": 100, "max_delay_ms": 400, "attempt_timeout_ms": 500}
POLICY = RetryPolicy(4, 100, 400, 500)
TIMEOUTS = (60_000, 700)  # long: the budget runs out first; short: the deadline does


@pytest.fixture(scope="module", params=KINDS)
def storm_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    tmp = tmp_path_factory.mktemp("orbit-storm")
    with fresh_url(request.param, tmp, migrated=True) as db_url:
        with execution_server(db_url, tmp / "server.log") as url:
            yield db_url, url


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _check_history(task: dict[str, Any], history: list[dict[str, Any]]) -> int:
    """Check the history of one task; return its number of started attempts. An attempt that
    never started (handed back before `started`) is re-leased at once: not a retry."""
    deadline = _time(task["deadline_at"])
    ordered = sorted(history, key=lambda a: a["number"])
    started = 0
    for previous, current in zip([None, *ordered], ordered, strict=False):
        if previous is not None and "started_at" in previous:
            wait = _time(current["leased_at"]) - _time(previous["ended_at"])
            floor = timedelta(milliseconds=floor_ms(POLICY, started) - 1)
            assert wait >= floor, (task["id"], previous["number"], wait)
        if "started_at" in current:
            started += 1
            assert _time(current["started_at"]) < deadline, (task["id"], current)
    return started


async def test_retry_storm_respects_backoff_and_every_deadline(
    storm_url: tuple[str, str], tmp_path: Path
) -> None:
    db_url, url = storm_url
    db = Database.open(db_url, pool_size=2)
    tenant = await Tenant.create(db, url)
    await db.close()
    limits = httpx.Limits(max_connections=32)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        proc = WorkerProcess(
            url, tenant.token, [tenant.queue_id], tmp_path / "w.log", concurrency=32
        )
        with workers(proc):
            await proc.connected()
            gate = asyncio.Semaphore(32)

            async def one(index: int) -> str:
                async with gate:
                    return await submit(
                        http,
                        tenant,
                        recovery_safety="IDEMPOTENT",
                        retry=RETRY,
                        task_timeout_ms=TIMEOUTS[index % 2],
                        payload={"outcome": "retryable"},
                    )

            ids = await asyncio.gather(*(one(i) for i in range(TASKS)))
            finals = [await wait_state(http, tenant, t, {"FAILED"}, timeout=180) for t in ids]
        codes = {f["error"]["code"] for f in finals}
        assert codes <= {"ATTEMPTS_EXHAUSTED", "DEADLINE_EXCEEDED"}
        assert "ATTEMPTS_EXHAUSTED" in codes
        retried = 0
        for final in finals:
            history = await attempts(http, tenant, final["id"])
            started = _check_history(final, history)  # 0: deadline passed before a start
            assert started <= RETRY["max_attempts"]
            retried += max(started - 1, 0)
        assert retried >= TASKS  # the storm really retried
