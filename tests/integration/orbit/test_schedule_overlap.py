"""The overlap policies of schedules against a real `orbit serve` and a real worker
(docs/orbit/schedules.md, "Overlap policies"): a schedule every second whose handler runs
2.5 s, so each slot finds the previous firing's task unfinished. `allow` runs them side by
side, `skip` records the slots that came while one ran, `buffer_one` keeps one and fires it
once the previous ended, `cancel_previous` cancels the running one and fires."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.schedule_records import FiringRow
from tests.support import orbit_workers
from tests.support.orbit_databases import fresh_url
from tests.support.orbit_schedules import (
    SECOND,
    clear_schedules,
    create_interval,
    firings_of,
    now_utc,
    tasks_of_queue,
    template_text,
    whole_second,
)
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import WorkerProcess, workers
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
exec_url, tenant = orbit_workers.exec_url, orbit_workers.tenant
HANDLER_MS = 2500
RUN_S = 7.5


@pytest.fixture(scope="module")
def exec_db_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fresh_url("sqlite", tmp_path_factory.mktemp("orbit-schedules"), migrated=True) as url:
        yield url


async def run_schedule(
    tenant: Tenant, tmp_path: Path, overlap: str
) -> tuple[list[FiringRow], dict[str, dict[str, Any]]]:
    """A schedule every second with a 2.5 s handler for RUN_S, then paused; its firing
    records and the queue's tasks once none is unfinished."""
    process = WorkerProcess(tenant.base_url, tenant.token, [tenant.queue_id], tmp_path / "w.log")
    with workers(process):
        await process.connected()
        template = template_text(tenant.queue_id, "demo.work", sleep_ms=HANDLER_MS)
        anchor = whole_second(now_utc()) + SECOND
        made = await create_interval(
            tenant.db, tenant.namespace_id, tenant.queue_id, 1000, anchor, template, overlap=overlap
        )
        await asyncio.sleep(RUN_S)
        await clear_schedules(tenant.db, [made.id])

        async def settled() -> bool:
            found = await tasks_of_queue(tenant.db, tenant.queue_id)
            return all(task["completed_at"] is not None for task in found.values())

        await wait_until(settled, 30, "the schedule's tasks to end", step=0.2)
    return await firings_of(tenant.db, [made.id]), await tasks_of_queue(tenant.db, tenant.queue_id)


def busy(found: dict[str, dict[str, Any]]) -> list[tuple[datetime, datetime]]:
    """Each task's life, submit to end, in submit order."""
    return sorted((task["created_at"], task["completed_at"]) for task in found.values())


def outcomes(firings: list[FiringRow]) -> list[str]:
    return [firing.outcome for firing in firings]


def overlapping(lives: list[tuple[datetime, datetime]]) -> int:
    return sum(1 for (_, end), (start, _) in zip(lives, lives[1:], strict=False) if start < end)


async def test_allow_runs_a_task_per_slot_side_by_side_and_counts_them_in_metrics(
    tenant: Tenant, tmp_path: Path
) -> None:
    firings, found = await run_schedule(tenant, tmp_path, "allow")
    assert set(outcomes(firings)) == {"fired"} and len(firings) >= 6
    assert len(found) == len(firings) == len({firing.task_id for firing in firings})
    assert overlapping(busy(found)) >= len(found) - 2  # each starts before the last ended
    metrics = httpx.get(f"{tenant.base_url}/metrics", timeout=10).text
    assert counted(metrics, 'orbit_schedule_firings_total{outcome="fired"}') >= len(firings)
    assert counted(metrics, "orbit_schedule_firing_lag_seconds_count") >= len(firings)
    assert counted(metrics, 'orbit_schedule_firing_lag_seconds_bucket{le="1.0"}') >= 1


def counted(metrics: str, name: str) -> float:
    """A sample of the server's /metrics (0 when absent)."""
    for line in metrics.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


async def test_skip_records_the_slots_that_came_while_a_task_ran(
    tenant: Tenant, tmp_path: Path
) -> None:
    firings, found = await run_schedule(tenant, tmp_path, "skip")
    fired = [firing for firing in firings if firing.outcome == "fired"]
    skipped = [firing for firing in firings if firing.outcome == "skipped_overlap"]
    assert len(fired) >= 2 and len(skipped) >= 3 and len(fired) + len(skipped) == len(firings)
    assert all(firing.task_id is None for firing in skipped)
    assert len(found) == len(fired) and overlapping(busy(found)) == 0
    lives = busy(found)
    for firing in skipped:  # each skipped slot came while a task of the schedule ran
        assert any(start <= firing.fired_at <= end for start, end in lives), firing


async def test_buffer_one_fires_one_kept_slot_when_the_previous_task_ends(
    tenant: Tenant, tmp_path: Path
) -> None:
    firings, found = await run_schedule(tenant, tmp_path, "buffer_one")
    fired = [firing for firing in firings if firing.outcome == "fired"]
    assert len(fired) >= 2 and "skipped_overlap" in outcomes(firings)
    lives = busy(found)
    assert len(found) == len(fired) and overlapping(lives) == 0
    kept = [firing for firing in fired if firing.fired_at - firing.nominal_at > SECOND]
    assert kept, fired  # a buffered slot fired after its nominal time, when its turn came
    for firing in kept:
        ended = max(end for _, end in lives if end <= firing.fired_at)
        assert firing.fired_at - ended < 2 * SECOND, (firing, ended)


async def test_cancel_previous_cancels_the_running_task_and_fires(
    tenant: Tenant, tmp_path: Path
) -> None:
    firings, found = await run_schedule(tenant, tmp_path, "cancel_previous")
    assert set(outcomes(firings)) == {"fired"} and len(firings) >= 6
    by_slot = [found[firing.task_id or ""] for firing in firings]
    assert [task["state"] for task in by_slot[:-1]] == ["CANCELLED"] * (len(by_slot) - 1)
    assert by_slot[-1]["state"] == "SUCCEEDED"
