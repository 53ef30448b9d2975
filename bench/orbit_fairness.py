"""Benchmark: Orbit fair dispatch on MySQL/MariaDB — one tenant floods a queue, the others
keep their pickup latency.

    .venv/bin/python bench/orbit_fairness.py [--database mysql+asyncmy://...] [--backlog 40]
        [--flood 100] [--workers 2] [--concurrency 8] [--sleep-ms 20]

One `orbit serve` and --workers `python -m agentcall.orbit.sdk.worker` processes
(--concurrency each) serve three queues of a fresh database `orbit_b_<hex>`; the phases run one
after the other on the same processes, each on its own queue, with `demo.work` tasks that
sleep --sleep-ms:
  quiet     tenants B..E submit --backlog tasks each (fairness on): their pickup latency
            without A
  fifo      tenant A submits --flood × --backlog tasks, then B..E theirs, on a queue without
            flow settings (the fast path, FIFO within a priority)
  fair      the same workload on a queue with fairness on (`fairness_key` = the tenant)
Pickup latency is measured on the database clock: attempt.started_at − task.created_at, for
B..E's tasks; throughput is the phase's tasks over first lease → last completion.
Targets: B..E's p95 pickup in `fair` < 2 × `quiet`, and `fair` throughput within 10 % of
`fifo`'s (the same workload without fairness).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentcall.orbit.store.db import Database  # noqa: E402
from agentcall.orbit.store.tables import task_attempts, tasks  # noqa: E402
from bench.idle_floor import quantile  # noqa: E402
from bench.orbit_submit import DEFAULT_URL, bench_database  # noqa: E402
from bench.orbit_tenant import bench_tenant  # noqa: E402
from bench.orbit_workers import start_processes  # noqa: E402

SMALL = ("B", "C", "D", "E")
BATCH = 100


@dataclass(frozen=True)
class Phase:
    name: str
    queue_id: str
    flood: bool  # tenant A submits first
    fair: bool  # the queue's fairness is on


@dataclass
class Figures:
    name: str
    count: int
    seconds: float
    pickup_ms: list[float]  # B..E's

    @property
    def rate(self) -> float:
        return self.count / self.seconds

    def p(self, q: float) -> float:
        return quantile(self.pickup_ms or [float("nan")], q)

    def line(self) -> str:
        return (
            f"{self.name:<9} {self.count} tasks in {self.seconds:.2f} s = {self.rate:.0f} tasks/s;"
            f" B..E pickup p50 {self.p(0.5):.0f} ms, p95 {self.p(0.95):.0f} ms"
        )


def bodies(queue_id: str, tenant: str, n: int, sleep_ms: int) -> list[dict[str, object]]:
    return [
        {
            "queue_id": queue_id,
            "handler": "demo.work",
            "handler_version": "v1",
            "payload_version": "v1",
            "payload": {"sleep_ms": sleep_ms},
            "recovery_safety": "IDEMPOTENT",
            "fairness_key": tenant,
        }
        for _ in range(n)
    ]


async def submit(http: httpx.AsyncClient, token: str, items: list[dict[str, object]]) -> None:
    """In batches of 100, four requests at a time (a tenant's backlog arriving at once)."""
    chunks = [items[n : n + BATCH] for n in range(0, len(items), BATCH)]
    gate = asyncio.Semaphore(4)

    async def one(chunk: list[dict[str, object]]) -> None:
        async with gate:
            headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": os.urandom(8).hex()}
            response = await http.post("/v1/tasks:batch", json={"tasks": chunk}, headers=headers)
            if response.status_code not in (200, 201):
                raise SystemExit(f"batch submit refused: {response.text[:300]}")

    await asyncio.gather(*(one(chunk) for chunk in chunks))


async def settle(db: Database, queue_id: str, expected: int, label: str) -> None:
    count = (
        sa.select(sa.func.count())
        .select_from(tasks)
        .where(tasks.c.queue_id == queue_id, tasks.c.state == "SUCCEEDED")
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        async with db.read() as conn:
            if int((await conn.execute(count)).scalar_one()) >= expected:
                return
        await asyncio.sleep(0.2)
    raise SystemExit(f"{label}: {expected} tasks did not succeed within 600 s")


async def measure(db: Database, phase: Phase, count: int) -> Figures:
    a = task_attempts.c
    span = sa.select(sa.func.min(a.leased_at), sa.func.max(a.ended_at)).where(
        a.queue_id == phase.queue_id
    )
    pickup = (
        sa.select(a.started_at, tasks.c.created_at)
        .join(tasks, tasks.c.id == a.task_id)
        .where(a.queue_id == phase.queue_id, tasks.c.fairness_key.in_(SMALL))
    )
    async with db.read() as conn:
        first, last = (await conn.execute(span)).one()
        rows = (await conn.execute(pickup)).all()
    ms = [(started - created).total_seconds() * 1000 for started, created in rows]
    return Figures(phase.name, count, (last - first).total_seconds(), ms)


async def run_phase(
    db: Database, http: httpx.AsyncClient, token: str, phase: Phase, args: argparse.Namespace
) -> Figures:
    if phase.fair:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        body = {"expected_revision": "1", "flow": {"fairness": True}}
        response = await http.patch(f"/v1/queues/{phase.queue_id}", json=body, headers=headers)
        if response.status_code != 200:
            raise SystemExit(f"PATCH refused: {response.text[:300]}")
    count = len(SMALL) * args.backlog
    if phase.flood:
        flood = args.flood * args.backlog
        await submit(http, token, bodies(phase.queue_id, "A", flood, args.sleep_ms))
        count += flood
    small = [b for t in SMALL for b in bodies(phase.queue_id, t, args.backlog, args.sleep_ms)]
    await submit(http, token, small)
    await settle(db, phase.queue_id, count, phase.name)
    return await measure(db, phase, count)


async def run(args: argparse.Namespace, url: sa.URL) -> None:
    url_text = url.render_as_string(hide_password=False)
    db = Database.open(url_text, pool_size=4)
    try:
        tenant = await bench_tenant(db, ["quiet", "fifo", "fair"])
        quiet, fifo, fair = tenant.queues.values()
        phases = [
            Phase("quiet", quiet, flood=False, fair=True),
            Phase("fifo", fifo, flood=True, fair=False),
            Phase("fair", fair, flood=True, fair=True),
        ]
        queue_ids = [phase.queue_id for phase in phases]
        settings = argparse.Namespace(
            submitters=8, server_processes=1, workers=args.workers, concurrency=args.concurrency
        )
        with tempfile.TemporaryDirectory() as tmp:
            base, processes = start_processes(
                url_text, tenant.token, queue_ids, settings, Path(tmp)
            )
            try:
                async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                    figures = [await run_phase(db, http, tenant.token, p, args) for p in phases]
            finally:
                for process in processes:
                    process.terminate()
                for process in processes:
                    process.wait(30)
        report(figures, args)
    finally:
        await db.close()


def report(figures: list[Figures], args: argparse.Namespace) -> None:
    quiet, fifo, fair = figures
    for item in figures:
        print(item.line())
    rise = fair.p(0.95) / quiet.p(0.95)
    throughput = fair.rate / fifo.rate
    unfair = fifo.p(0.95) / quiet.p(0.95)
    print(f"ratio     B..E p95 pickup fair/quiet {rise:.2f} (fifo/quiet {unfair:.2f})")
    print(f"ratio     throughput fair/fifo {throughput:.2f}")
    met = rise < 2 and abs(throughput - 1) <= 0.10
    print(
        f"target    A floods {args.flood}x: B..E p95 pickup < 2x without A, throughput within"
        f" 10 % of FIFO: {'met' if met else 'NOT met'}"
    )
    print(f"load      {os.getloadavg()[0]:.1f} (1 min average at the end)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// admin URL")
    parser.add_argument("--backlog", type=int, default=40, help="tasks of each of B..E")
    parser.add_argument("--flood", type=int, default=100, help="A's backlog, × --backlog")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--sleep-ms", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()
    async with bench_database(args.database, args.keep) as url:
        await run(args, url)


if __name__ == "__main__":
    asyncio.run(main())
