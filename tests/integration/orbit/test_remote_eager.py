"""Remote eager dispatch between two `orbit serve` processes on one MariaDB database
(docs/orbit/scaling.md "Remote eager dispatch"): an idle worker connected to B offers a slot,
a submit on A leases its task to that slot in its own transaction, and B only delivers it.
The periodic round is 5 s in these tests unless a test says otherwise: only the remote eager
path explains a start within milliseconds."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import orbit_worker_offers, task_attempts, tasks
from tests.support.orbit_databases import fresh_url
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import WorkerProcess, submit, workers
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]

SLOW_ROUND = {"ORBIT_DISPATCH_TICK_MS": "5000", "ORBIT_LEASE_TTL_MS": "8000"}
# B advertises an address nobody listens on: every datagram sent to B is lost (ICMP
# unreachable on loopback), while B's own datagrams still reach A
UNREACHABLE_B = {"ORBIT_PEER_ADVERTISE": "127.0.0.2"}


@dataclass
class Pair:
    a: str
    b: str
    tenant: Tenant
    http: httpx.AsyncClient

    async def metric(self, base: str, name: str) -> float:
        text = (await self.http.get(f"{base}/metrics")).text
        return sum(
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith(name + " ") or line.startswith(name + "{")
        )

    def worker(self, base: str, log: Path) -> WorkerProcess:
        """A worker with one slot serving the tenant's queue, connected to `base`."""
        return WorkerProcess(base, self.tenant.token, [self.tenant.queue_id], log, concurrency=1)

    async def offered(self, count: int = 1) -> None:
        """B published `count` offers and A heard of them (its belief)."""

        async def published() -> bool:
            return await self.metric(self.b, "orbit_worker_offers_published_total") >= count

        await wait_until(published, 15, "B to offer its idle worker's slot")
        await asyncio.sleep(0.3)  # the offer datagram reaches A

    async def submit_to_offer(self, worker: WorkerProcess) -> str:
        """Once `worker` (on B) is connected and its slot offered: a no-op task submitted to A."""
        await worker.connected()
        await self.offered()
        return await submit(self.http, self.tenant, handler="demo.noop")

    async def attempts(self, task_id: str) -> list[Any]:
        async with self.tenant.db.read() as conn:
            query = sa.select(task_attempts).where(task_attempts.c.task_id == task_id)
            return list((await conn.execute(query.order_by(task_attempts.c.number))).all())

    async def state(self, task_id: str) -> str:
        async with self.tenant.db.read() as conn:
            query = sa.select(tasks.c.state).where(tasks.c.id == task_id)
            return str((await conn.execute(query)).scalar_one())

    async def settled(self, task_id: str, timeout: float = 20) -> None:
        async def done() -> bool:
            return await self.state(task_id) == "SUCCEEDED"

        await wait_until(done, timeout, f"task {task_id} to succeed", step=0.01)


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with fresh_url("mariadb", tmp_path, migrated=True) as found:
        yield found


@contextlib.contextmanager
def _two(
    url: str, tmp: Path, env_b: dict[str, str] | None = None
) -> Iterator[tuple[str, str, str]]:
    with (
        execution_server(url, tmp / "a.log", **SLOW_ROUND) as a,
        execution_server(url, tmp / "b.log", **{**SLOW_ROUND, **(env_b or {})}) as b,
    ):
        yield url, a, b


@contextlib.asynccontextmanager
async def _pair(url: str, a: str, b: str) -> AsyncIterator[Pair]:
    db = Database.open(url, pool_size=4)
    try:
        tenant = await Tenant.create(db, a)
        # each process reads the registrations about once a second: A learns B's address (for
        # the claim's datagram) within a second of B's start
        await asyncio.sleep(1.1)
        async with httpx.AsyncClient(base_url=a, timeout=10) as http:
            yield Pair(a, b, tenant, http)
    finally:
        await db.close()


async def test_a_submit_on_a_is_leased_in_its_transaction_to_an_idle_worker_on_b(
    url: str, tmp_path: Path
) -> None:
    with _two(url, tmp_path) as (url, a, b):
        async with _pair(url, a, b) as pair:
            worker = pair.worker(b, tmp_path / "w.log")
            with workers(worker):
                await worker.connected()
                for number in range(5):
                    await pair.offered(number + 1)
                    task_id = await submit(pair.http, pair.tenant, handler="demo.noop")
                    await pair.settled(task_id, timeout=3)  # far below the 5 s round
                    (attempt,) = await pair.attempts(task_id)
                    assert attempt.state == "SUCCEEDED" and attempt.number == 1
                    assert (attempt.started_at - attempt.leased_at).total_seconds() < 1
                assert await pair.metric(a, "orbit_remote_eager_claims_total") == 5
                assert await pair.metric(b, "orbit_remote_eager_leases_total") == 5
                assert await pair.metric(b, "orbit_leases_total") == 5  # no lease round ran
                assert await pair.metric(a, "orbit_leases_total") == 0


async def test_a_lost_claim_datagram_is_delivered_by_b_s_periodic_round(
    url: str, tmp_path: Path
) -> None:
    env_b = {**UNREACHABLE_B, "ORBIT_DISPATCH_TICK_MS": "300"}
    with _two(url, tmp_path, env_b) as (url, a, b):
        async with _pair(url, a, b) as pair:
            worker = pair.worker(b, tmp_path / "w.log")
            with workers(worker):
                task_id = await pair.submit_to_offer(worker)
                await pair.settled(task_id, timeout=3)
                (attempt,) = await pair.attempts(task_id)
                assert attempt.state == "SUCCEEDED"
                assert await pair.metric(a, "orbit_remote_eager_claims_total") == 1
                assert await pair.metric(b, "orbit_remote_eager_leases_total") == 1
                assert await pair.metric(b, "orbit_peer_hints_received_total") == 0  # all lost


async def test_b_s_worker_gone_after_the_claim_leaves_nothing_stuck(
    url: str, tmp_path: Path
) -> None:
    """A claims B's offer; the datagram is lost and B's round is 5 s away; the worker is
    killed: B takes the offer back, finds it claimed, and shortens that lease like any lease of
    a closed connection. The task (never started) is leased again to a new worker and
    succeeds once; there never were two live attempts."""
    env_b = {**UNREACHABLE_B, "ORBIT_RECONNECT_GRACE_MS": "300", "ORBIT_SWEEP_INTERVAL_MS": "50"}
    with _two(url, tmp_path, env_b) as (url, a, b):
        async with _pair(url, a, b) as pair:
            first = pair.worker(b, tmp_path / "w1.log")
            with workers(first):
                task_id = await pair.submit_to_offer(first)
                assert await pair.state(task_id) == "LEASED"  # claimed in the submit
            second = pair.worker(a, tmp_path / "w2.log")
            with workers(second):
                await pair.settled(task_id, timeout=15)
            attempts = await pair.attempts(task_id)
            assert [a.state for a in attempts][-1] == "SUCCEEDED"
            assert sum(1 for a in attempts if a.started_at is not None) == 1
            claimed = attempts[0]  # held by the killed worker, never delivered nor started
            assert claimed.started_at is None and claimed.state != "SUCCEEDED"
            # shortened at the disconnect (grace 0.3 s), not left to its 8 s lease
            assert (claimed.ended_at - claimed.leased_at).total_seconds() < 5
            assert all(a.ended_at is not None for a in attempts)
            for earlier, later in zip(attempts, attempts[1:], strict=False):
                assert earlier.ended_at <= later.leased_at  # one live holder at a time
            async with pair.tenant.db.read() as conn:
                left = (
                    await conn.execute(
                        sa.select(sa.func.count())
                        .select_from(orbit_worker_offers)
                        .where(orbit_worker_offers.c.task_id.is_not(None))
                    )
                ).scalar_one()
            assert left == 0


async def test_a_and_b_competing_for_one_offered_slot_never_exceed_its_capacity(
    url: str, tmp_path: Path
) -> None:
    """Submits to A (claims) and to B (local eager: B takes its offer back) race for the one
    slot of B's idle worker; the attempts of that connection never overlap."""
    with _two(url, tmp_path, {"ORBIT_DISPATCH_TICK_MS": "200"}) as (url, a, b):
        async with (
            _pair(url, a, b) as pair,
            httpx.AsyncClient(base_url=b, timeout=10) as http_b,
        ):
            worker = pair.worker(b, tmp_path / "w.log")
            with workers(worker):
                await worker.connected()
                ids: list[str] = []
                for _ in range(6):
                    await pair.offered(len(ids) // 2 + 1)
                    ids += await asyncio.gather(
                        submit(
                            pair.http, pair.tenant, handler="demo.work", payload={"sleep_ms": 30}
                        ),
                        submit(http_b, pair.tenant, handler="demo.work", payload={"sleep_ms": 30}),
                    )
                    for task_id in ids[-2:]:
                        await pair.settled(task_id, timeout=10)
            spans = []
            for task_id in ids:
                for attempt in await pair.attempts(task_id):
                    spans.append((attempt.leased_at, attempt.ended_at, attempt.state))
            assert sum(1 for *_, state in spans if state == "SUCCEEDED") == len(ids)
            spans.sort()
            for (_, ended, _), (leased, _, _) in zip(spans, spans[1:], strict=False):
                assert ended <= leased, spans  # capacity 1: one attempt at a time
            claims = await pair.metric(a, "orbit_remote_eager_claims_total")
            withdrawn = await pair.metric(b, "orbit_worker_offers_withdrawn_total")
            print(f"claims by A {claims:.0f}, offers B took back {withdrawn:.0f}")
            assert claims >= 1 and withdrawn >= 1  # both sides won the slot at times
