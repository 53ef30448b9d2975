"""Waiting for tasks without a polling loop per waiter (agentcall.orbit.execution.waiters): a waiter
is woken at once by its own process's completion path, and otherwise by one shared check that
names every waited task in one query, run only while someone waits. The hub reports what
ends here (agentcall.orbit.execution.observe): lease wait, attempt outcome, and the task to wake."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest

from agentcall.orbit.execution.batch import Batcher
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.kernel import Kernel
from agentcall.orbit.execution.observe import ExecutionObserver
from agentcall.orbit.execution.upkeep import Upkeep
from agentcall.orbit.execution.waiters import Waiters

pytestmark = pytest.mark.unit


class _Checks:
    def __init__(self, settled: set[str], fail: bool = False) -> None:
        self.settled = settled
        self.fail = fail
        self.calls: list[list[str]] = []

    async def __call__(self, ids: Sequence[str]) -> set[str]:
        self.calls.append(list(ids))
        if self.fail:
            raise OSError("database down")
        return self.settled & set(ids)


async def test_a_wake_from_this_process_ends_the_wait_at_once() -> None:
    waiters = Waiters(_Checks(set()))
    with waiters.watch("t1") as watch:
        asyncio.get_running_loop().call_later(0.01, waiters.wake, "t1")
        started = asyncio.get_running_loop().time()
        assert await watch.woken(5.0)
        assert asyncio.get_running_loop().time() - started < 1.0
    assert waiters.waiting == 0


async def test_a_wait_without_wake_ends_when_its_time_runs_out() -> None:
    waiters = Waiters(_Checks(set()))
    with waiters.watch("t1") as watch:
        waiters.wake("other")
        assert not await watch.woken(0.05)


async def test_draining_ends_every_wait_now_and_every_later_one_at_once() -> None:
    waiters = Waiters(_Checks(set()))
    with waiters.watch("t1") as first, waiters.watch("t2") as second:
        asyncio.get_running_loop().call_later(0.01, waiters.drain)
        assert await first.woken(5.0) and first.stopped and second.stopped
    with waiters.watch("t3") as later:
        assert later.stopped and await later.woken(5.0)
    assert waiters.waiting == 0


async def test_a_stopped_wait_ends_without_stopping_the_others() -> None:
    waiters = Waiters(_Checks(set()))
    with waiters.watch("t1") as gone, waiters.watch("t1") as other:
        gone.stop()
        assert await gone.woken(5.0) and gone.stopped
        assert not other.stopped and not await other.woken(0.02)


async def test_one_shared_check_serves_every_waiter() -> None:
    checks = _Checks({"t3", "t7"})
    waiters = Waiters(checks)
    woken: list[str] = []

    async def wait(task_id: str) -> None:
        with waiters.watch(task_id) as watch:
            if await watch.woken(2.0):
                woken.append(task_id)

    tasks = [asyncio.create_task(wait(f"t{i % 10}")) for i in range(200)]
    await asyncio.sleep(0)
    assert waiters.waiting == 200
    await waiters.check_once()
    assert len(checks.calls) == 1 and len(checks.calls[0]) == 10  # one query, each task once
    await asyncio.sleep(0.01)
    assert sorted(set(woken)) == ["t3", "t7"] and len(woken) == 40
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_the_shared_check_runs_only_while_someone_waits_and_survives_failures() -> None:
    checks = _Checks(set(), fail=True)
    failures: list[int] = []
    waiters = Waiters(checks, every_s=0.01, on_failure=lambda: failures.append(1))
    waiters.start()
    await asyncio.sleep(0.06)
    assert checks.calls == []  # nobody waits: no query at all
    with waiters.watch("t1") as watch:
        await watch.woken(0.06)
    await waiters.stop()
    assert len(checks.calls) >= 2 and len(failures) == len(checks.calls)  # kept going


class _Observer(ExecutionObserver):
    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def lease_waited(self, handler: str, seconds: float) -> None:
        self.seen.append(("waited", handler, seconds))

    def attempt_ended(self, handler: str, outcome: str, error_code: str, seconds: float) -> None:
        self.seen.append(("ended", handler, outcome, error_code))

    def task_changed(self, task_id: str) -> None:
        self.seen.append(("changed", task_id))


def _grant(attempt_id: str, task_id: str, waited_s: float) -> Any:
    leased = datetime(2026, 12, 1, tzinfo=UTC)
    task = SimpleNamespace(
        id=task_id, handler="file.convert", available_at=leased - timedelta(seconds=waited_s)
    )
    return SimpleNamespace(attempt_id=attempt_id, task=task, leased_at=leased)


def test_the_hub_observes_each_lease_and_each_end_once() -> None:
    observer = _Observer()
    counted: list[int] = []
    hub = Hub(
        cast(Batcher, None),
        cast(Kernel, None),
        cast(Upkeep, None),
        tick_s=1,
        sweep_s=1,
        on_grants=counted.append,
        observer=observer,
    )
    hub.granted([_grant("a1", "t1", 1.5), _grant("a2", "t2", -3)])  # ready in the future: 0
    assert counted == [2]
    assert observer.seen == [("waited", "file.convert", 1.5), ("waited", "file.convert", 0.0)]
    observer.seen.clear()
    hub.finished("a1", "SUCCEEDED")
    hub.finished("a1", "SUCCEEDED")  # a resent result: observed once
    hub.ended("a1")
    hub.ended("a2")  # ended without a result here (lost, expired): LOST
    hub.ended("a9")  # never leased here: nothing
    assert observer.seen == [
        ("ended", "file.convert", "SUCCEEDED", ""),
        ("changed", "t1"),
        ("ended", "file.convert", "LOST", ""),
        ("changed", "t2"),
    ]
