"""The group commit mechanism (`agentcall.orbit.store.group_commit`): concurrent callers share
groups, each caller gets its own outcome only when its group is done, errors stay with their item,
a failing group answers every member, and a caller that goes away harms nobody."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentcall.orbit.domain.errors import InvalidArgument, Unavailable
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.group_commit import GroupCommit
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.submit_group import SubmitGroups

pytestmark = pytest.mark.unit


class Recorder:
    """A group runner that records its groups and holds each until released."""

    def __init__(self) -> None:
        self.groups: list[list[int]] = []
        self.release = asyncio.Event()
        self.done: list[int] = []

    async def __call__(self, items: list[int]) -> Sequence[str | BaseException]:
        self.groups.append(list(items))
        await self.release.wait()
        self.done.extend(items)
        return [InvalidArgument("odd", "n") if i % 2 else f"ok {i}" for i in items]


async def test_callers_arriving_during_a_commit_form_the_next_group() -> None:
    runner = Recorder()
    commit: GroupCommit[int, str] = GroupCommit(runner, lanes=1, max_group=64)
    first = asyncio.create_task(commit(0))
    await asyncio.sleep(0)  # the lane takes [0] and waits in its "commit"
    others = [asyncio.create_task(commit(i)) for i in range(2, 12, 2)]
    await asyncio.sleep(0)
    assert not first.done() and runner.groups == [[0]]  # nobody answered before the commit
    runner.release.set()
    assert await first == "ok 0"
    assert await asyncio.gather(*others) == [f"ok {i}" for i in range(2, 12, 2)]
    assert runner.groups == [[0], [2, 4, 6, 8, 10]]
    assert (commit.groups, commit.items) == (2, 6)


async def test_an_item_error_stays_with_its_item() -> None:
    runner = Recorder()
    runner.release.set()
    commit: GroupCommit[int, str] = GroupCommit(runner, lanes=1)
    outcomes = await asyncio.gather(*(commit(i) for i in range(4)), return_exceptions=True)
    assert outcomes[0] == "ok 0" and outcomes[2] == "ok 2"
    assert isinstance(outcomes[1], InvalidArgument) and isinstance(outcomes[3], InvalidArgument)


@pytest.mark.parametrize(("lanes", "max_group"), [(1, 3), (2, 64), (3, 1)])
async def test_lanes_and_group_size_are_bounded(lanes: int, max_group: int) -> None:
    running = 0
    peak = 0
    sizes: list[int] = []

    async def run(items: list[int]) -> list[int]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        sizes.append(len(items))
        await asyncio.sleep(0.001)
        running -= 1
        return items

    commit: GroupCommit[int, int] = GroupCommit(run, lanes=lanes, max_group=max_group)
    assert await asyncio.gather(*(commit(i) for i in range(40))) == list(range(40))
    assert peak <= lanes and max(sizes) <= max_group and sum(sizes) == 40


async def test_a_failing_group_answers_every_member() -> None:
    async def broken(items: list[int]) -> list[int]:
        raise Unavailable("the database is unavailable; retry with the same key")

    commit: GroupCommit[int, int] = GroupCommit(broken, lanes=1)
    outcomes = await asyncio.gather(*(commit(i) for i in range(5)), return_exceptions=True)
    assert all(isinstance(outcome, Unavailable) for outcome in outcomes)

    async def miscounting(items: list[int]) -> list[int]:
        return items[:-1]

    commit = GroupCommit(miscounting, lanes=1)
    outcomes = await asyncio.gather(*(commit(i) for i in range(3)), return_exceptions=True)
    assert all(isinstance(outcome, RuntimeError) for outcome in outcomes)


async def test_a_caller_that_goes_away_does_not_cancel_its_group() -> None:
    runner = Recorder()
    commit: GroupCommit[int, str] = GroupCommit(runner, lanes=1)
    gone = asyncio.create_task(commit(0))
    stays = asyncio.create_task(commit(2))
    await asyncio.sleep(0)
    gone.cancel()
    runner.release.set()
    assert await stays == "ok 2"
    assert runner.done == [0, 2]  # the cancelled caller's item was still written
    assert gone.cancelled()


@pytest.mark.parametrize("lanes", [1, 2])
async def test_a_caller_right_after_a_lane_ends_is_served(lanes: int) -> None:
    """A lane that found nothing more to do must not count as running any more: the next
    caller (woken by the last answer, before the lane's task is done) starts a new lane."""

    async def run(items: list[int]) -> list[int]:
        return items

    commit: GroupCommit[int, int] = GroupCommit(run, lanes=lanes)
    async with asyncio.timeout(5):  # (wait_for would add a task and hide the race)
        for number in range(50):
            assert await commit(number) == number


async def test_groups_are_bounded_by_weight() -> None:
    """Large submits do not pile up into one oversized statement; a single heavy item still
    runs (alone)."""
    runner = Recorder()
    commit: GroupCommit[int, str] = GroupCommit(runner, lanes=1, weight=lambda i: i, max_weight=10)
    first = asyncio.create_task(commit(0))
    await asyncio.sleep(0)
    rest = [asyncio.create_task(commit(i)) for i in (4, 6, 2, 20, 8)]
    await asyncio.sleep(0)
    runner.release.set()
    await asyncio.gather(first, *rest)
    assert runner.groups == [[0], [4, 6], [2], [20], [8]]


def test_group_commit_refuses_nonsense_settings() -> None:
    async def run(items: list[int]) -> list[int]:
        return items

    with pytest.raises(ValueError, match="at least 1"):
        GroupCommit(run, lanes=0)


# ---- SubmitGroups: a failed group runs each submit alone --------------------------------


def item(key: str) -> PendingSubmit:
    principal = Principal("t" * 32, "n" * 32, frozenset(Permission), frozenset())
    scope = Scope("n" * 32, "tasks.submit", "", key)
    request = SimpleNamespace(queue_id=f"queue-{key}")  # what the group reads of a request
    return PendingSubmit(principal, request, scope, None, "r" * 32)  # type: ignore[arg-type]


class FailingGroups(SubmitGroups):
    async def _transaction(self, items: list[PendingSubmit]) -> None:
        raise Unavailable("the database is unavailable; retry with the same key")


async def test_o_sub_4_a_failed_group_runs_each_submit_alone(tmp_path: Path) -> None:
    """Every member is answered: by the single path's receipt or by its own error."""
    alone_calls: list[str] = []

    async def alone(pending: PendingSubmit) -> Receipt:
        alone_calls.append(pending.scope.key)
        if pending.scope.key == "bad":
            raise InvalidArgument("refused alone", "payload")
        return Receipt(201, False, f'{{"key":"{pending.scope.key}"}}')

    db = Database.open(f"sqlite+aiosqlite:///{tmp_path}/never-opened.db")  # no I/O here
    try:
        woken: list[str] = []
        groups = FailingGroups(db, alone, on_accepted=woken.append)
        outcomes = await groups._run([item("a"), item("bad"), item("c")])
        assert outcomes[0] == Receipt(201, False, '{"key":"a"}')
        assert isinstance(outcomes[1], InvalidArgument)
        assert outcomes[2] == Receipt(201, False, '{"key":"c"}')
        assert sorted(alone_calls) == ["a", "bad", "c"] and groups.fallbacks == 1
        assert woken == ["queue-a", "queue-c"]  # each accepted submit wakes its queue's dispatch
        single = await groups._run([item("solo")])  # a group of one: its own error
        assert isinstance(single[0], Unavailable) and groups.fallbacks == 1
    finally:
        await db.close()
