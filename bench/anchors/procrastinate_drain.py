"""Procrastinate's drain of no-op tasks: the second peer anchor of Orbit's drain.

    var/bench/anchors-venv/bin/python bench/anchors/procrastinate_drain.py [--n 10000]
        [--workers 2] [--concurrency 16] [--json]

Procrastinate 3.10 on a throwaway PostgreSQL cluster (bench/anchors/postgres.py: Debian's
``postgresql``, its own port and directory, durable commits). Its schema is applied, ``--n``
jobs are deferred in batches of 500 (``batch_defer_async``), then ``--workers`` worker
processes (``procrastinate worker``, ``--concurrency`` async jobs each, LISTEN/NOTIFY on)
drain the queue; each job appends one byte to the mark file (bench/anchors/common.py), and
jobs are kept on completion (``succeeded`` rows, as Orbit keeps its tasks). Figures: tasks/s
from the first mark to the last, CPU per task of the workers and of PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import procrastinate  # noqa: E402

from bench.anchors.common import MARK_ENV, Drain, load, watch  # noqa: E402
from bench.anchors.postgres import postgres_cluster, postmaster_pid  # noqa: E402
from bench.anchors.procrastinate_app import CONNINFO_ENV, QUEUE, app, noop  # noqa: E402


async def defer_all(n: int) -> None:
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        for start in range(0, n, 500):
            await noop.batch_defer_async(*({"i": i} for i in range(start, min(n, start + 500))))


def drain(n: int, workers: int, concurrency: int) -> Drain:
    with postgres_cluster() as conninfo, tempfile.TemporaryDirectory() as tmp:
        os.environ[CONNINFO_ENV] = conninfo
        with app.replace_connector(procrastinate.PsycopgConnector(conninfo=conninfo)):
            asyncio.run(defer_all(n))
        marks = Path(tmp) / "marks"
        env = {**os.environ, MARK_ENV: str(marks), "PYTHONPATH": str(REPO)}
        began = load()
        processes = [
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "procrastinate"),
                    *("--app", "bench.anchors.procrastinate_app.app", "worker"),
                    *("--queues", QUEUE, "--concurrency", str(concurrency), "--wait"),
                ],
                cwd=REPO,
                env=env,
                stdout=(Path(tmp) / f"worker{index}.log").open("wb"),
                stderr=subprocess.STDOUT,
            )
            for index in range(workers)
        ]
        try:
            pids = {f"worker{index}": p.pid for index, p in enumerate(processes)}
            if (postmaster := postmaster_pid(conninfo)) is not None:
                pids["PostgreSQL"] = postmaster
            seconds, cpu = watch(marks, n, pids)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
    worker_cpu = sum(v for k, v in cpu.items() if k.startswith("worker"))
    figures = {"workers": worker_cpu, "PostgreSQL": cpu.get("PostgreSQL", 0.0)}
    return Drain("procrastinate", n, seconds, figures, began)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=16, help="async jobs per worker")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    started = time.monotonic()
    found = drain(args.n, args.workers, args.concurrency)
    print(found.to_json() if args.json else found.line())
    print(f"  procrastinate drain done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
