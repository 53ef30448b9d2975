"""Per-task serial lanes (D-CTL-1): order within a task, parallel across tasks, no skipping."""

from __future__ import annotations

import asyncio
import random

from agentcall.dispatcher.control.lanes import TaskLanes


async def test_one_task_runs_strictly_in_submission_order_d_ctl_1() -> None:
    lanes = TaskLanes()
    seen: list[int] = []
    rng = random.Random(7)

    def work(n: int):  # type: ignore[no-untyped-def]
        async def run() -> None:
            await asyncio.sleep(rng.random() / 500)
            seen.append(n)

        return run

    futures = [lanes.submit("task-a", f"w{n}", work(n)) for n in range(40)]
    await asyncio.gather(*futures)
    assert seen == list(range(40))


async def test_tasks_proceed_in_parallel_d_ctl_1() -> None:
    """A blocked lane (a long drain) never holds up another task's controls."""
    lanes = TaskLanes()
    release = asyncio.Event()
    order: list[str] = []

    async def slow() -> None:
        await release.wait()
        order.append("a")

    async def fast() -> None:
        order.append("b")

    blocked = lanes.submit("task-a", "drain", slow)
    await asyncio.wait_for(lanes.submit("task-b", "pause", fast), 1)
    assert order == ["b"] and not blocked.done()
    release.set()
    await blocked
    assert order == ["b", "a"]


async def test_a_failing_item_is_retried_in_place_never_skipped_d_ctl_1() -> None:
    lanes = TaskLanes(retry_s=0.001, retry_max_s=0.002)
    seen: list[str] = []
    attempts = {"n": 0}

    async def flaky() -> None:
        attempts["n"] += 1
        if attempts["n"] < 3:
            raise ConnectionError("link down")
        seen.append("stop")

    async def later() -> None:
        seen.append("resume")

    first = lanes.submit("task-a", "stop", flaky)
    second = lanes.submit("task-a", "resume", later)
    await asyncio.gather(first, second)
    assert seen == ["stop", "resume"] and attempts["n"] == 3


async def test_snapshot_shows_busy_lanes_and_close_cancels() -> None:
    lanes = TaskLanes()
    hold = asyncio.Event()
    pending = lanes.submit("task-a", "drain", hold.wait)
    await asyncio.sleep(0)
    assert lanes.snapshot()["task-a"]["current"] == "drain"
    await lanes.close()
    assert pending.cancelled() and lanes.snapshot() == {}


async def test_join_waits_for_every_lane() -> None:
    lanes = TaskLanes()
    done: list[str] = []

    async def work() -> None:
        await asyncio.sleep(0.001)
        done.append("x")

    for task in ("a", "b", "c"):
        lanes.submit(task, "w", work)
    await lanes.join()
    assert done == ["x", "x", "x"]
