"""What an open console costs: the loads of `orbit_submit.py` (HTTP submits) and
`orbit_workers.py` (submits run by worker processes) against ONE `orbit serve` on a fresh
MariaDB database, in short segments with the console open and refreshing (signed in,
reloading the overview and the queue page every 3 s, as console.js does) and without,
interleaved without, with, with, without, ... in the same server process, so that both see the
same machine, warm caches and the same table sizes: other work on a shared machine moves
whole runs by a factor of two, far more than the 10 % this measures. Per mode: throughput
(total tasks / total time of its segments), the median of the segments' rates, and the CPU
per task of the server process and of MariaDB.

    .venv/bin/python bench/console_overhead.py [--segments 8] [--submit-n 2000]
        [--workers-n 1000]

Run it alone (no other benchmark at the same time, e.g. under the machine's bench lock).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentcall.orbit.domain.tokens import ALL_PERMISSIONS  # noqa: E402
from agentcall.orbit.store.admin import Admin  # noqa: E402
from agentcall.orbit.store.db import Database  # noqa: E402
from agentcall.orbit.store.migrate import upgrade  # noqa: E402
from bench.console_viewer import console_open  # noqa: E402
from bench.orbit_submit import DEFAULT_URL, bench_database, over_http  # noqa: E402
from bench.orbit_workers import cpu_use, start_processes, submit_all, wait_done  # noqa: E402


@dataclass
class Mode:
    """The segments of one mode (console open or not)."""

    tasks: int = 0
    seconds: float = 0.0
    rates: list[float] = field(default_factory=list)
    server_cpu: float = 0.0
    database_cpu: float = 0.0
    refreshes: int = 0

    def add(self, n: int, seconds: float, used: list[float], refreshes: int) -> None:
        self.tasks += n
        self.seconds += seconds
        self.rates.append(n / seconds)
        self.server_cpu += used[0]
        self.database_cpu += used[-2]
        self.refreshes += refreshes

    def figures(self) -> tuple[float, float, float, float]:
        return (
            self.tasks / self.seconds,
            statistics.median(self.rates),
            1000 * self.server_cpu / self.tasks,
            1000 * self.database_cpu / self.tasks,
        )


def order(segments: int) -> list[bool]:
    """without, with, with, without, without, with, ...: each mode as often in each place."""
    return [(index % 4) in (1, 2) for index in range(segments)]


async def segments(
    name: str,
    count: int,
    n: int,
    run: Callable[[int], Awaitable[None]],
    pids: list[int],
    base: str,
    token: str,
    queue_id: str,
) -> dict[bool, Mode]:
    modes = {False: Mode(), True: Mode()}
    for index, console in enumerate(order(count)):
        before, began = cpu_use(pids), time.perf_counter()
        async with console_open(base, token, queue_id, console) as pages:
            await run(index)
            seconds = time.perf_counter() - began
        used = cpu_use(pids, before)
        modes[console].add(n, seconds, used, pages[0])
        print(
            f"  {name} segment {index + 1}/{count} {'with' if console else 'without'} "
            f"console: {n / seconds:.1f}/s, server CPU {1000 * used[0] / n:.2f} ms each, "
            f"{pages[0]} page loads; load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    return modes


def report(name: str, modes: dict[bool, Mode]) -> None:
    without, with_ = modes[False].figures(), modes[True].figures()
    labels = (
        "throughput /s",
        "median segment /s",
        "server CPU ms per task",
        "MariaDB CPU ms per task",
    )
    for label, a, b in zip(labels, without, with_, strict=True):
        verdict = "within" if abs(b / a - 1) <= 0.1 else "NOT within"
        print(
            f"{name} {label}: without console {a:.2f}, with console {b:.2f}, "
            f"ratio {b / a:.3f} ({verdict} 10 %)",
            flush=True,
        )
    print(f"{name} console page loads during its segments: {modes[True].refreshes}", flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// admin URL")
    parser.add_argument("--segments", type=int, default=8, help="per load, both modes together")
    parser.add_argument("--submit-n", type=int, default=2000, help="submits per segment")
    parser.add_argument("--workers-n", type=int, default=1000, help="tasks per segment")
    parser.add_argument("--only", choices=["submit", "workers"])
    args = parser.parse_args()
    print(
        f"cpus={os.cpu_count()} load average at start "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    async with bench_database(args.database, False) as url:
        url_text = url.render_as_string(hide_password=False)
        db = Database.open(url_text, pool_size=2)
        try:
            await upgrade(db)
            admin = Admin(db)
            made = await admin.init("bench", "submits")
            ran = await admin.create_queue(made.namespace_id, "workers")
            token = (
                await admin.create_token(
                    made.namespace_id, ALL_PERMISSIONS, [made.queue_id, ran], None
                )
            ).token
            options = argparse.Namespace(
                submitters=16, server_processes=1, workers=4, concurrency=128
            )
            with tempfile.TemporaryDirectory() as tmp:
                base, processes = start_processes(url_text, token, [ran], options, Path(tmp))
                try:
                    await _both(
                        args, db, base, token, made.queue_id, ran, [p.pid for p in processes]
                    )
                finally:
                    for process in processes:
                        process.terminate()
                    for process in processes:
                        process.wait(15)
        finally:
            await db.close()
    print(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


async def _both(
    args: argparse.Namespace,
    db: Database,
    base: str,
    token: str,
    submit_queue: str,
    work_queue: str,
    pids: list[int],
) -> None:
    port = int(base.rsplit(":", 1)[1])
    if args.only in (None, "submit"):
        await over_http(port, token, submit_queue, 500, 4)  # warm-up, not measured

        async def submits(index: int) -> None:
            await over_http(port, token, submit_queue, args.submit_n, 16)

        modes = await segments(
            "orbit_submit",
            args.segments,
            args.submit_n,
            submits,
            pids[:1],
            base,
            token,
            submit_queue,
        )
        report("orbit_submit", modes)
    if args.only in (None, "workers"):
        await submit_all(base, token, work_queue, 300, 16)  # warm-up, not measured
        await wait_done(db, work_queue, 300, "warm-up")

        async def run_tasks(index: int) -> None:
            await submit_all(base, token, work_queue, args.workers_n, 16)
            await wait_done(db, work_queue, 300 + (index + 1) * args.workers_n, "tasks")

        modes = await segments(
            "orbit_workers", args.segments, args.workers_n, run_tasks, pids, base, token, work_queue
        )
        report("orbit_workers", modes)


if __name__ == "__main__":
    asyncio.run(main())
