"""`make bench-anchors`: Orbit's drain of no-op tasks beside Celery's and Procrastinate's, in
the same run on the same machine, and the ratios Orbit/Celery and Orbit/Procrastinate.

    eval "$(scripts/services env)"
    .venv/bin/python bench/anchors/run.py [--n 10000] [--rounds 3]
        [--anchors-python var/bench/anchors-venv/bin/python]

Each round runs, one after the other: Orbit's drain (bench/orbit_workers.py's: ``--n``
WAITING tasks inserted into a fresh MariaDB database before ``orbit serve`` and 4 worker
processes × 128 slots start, first lease → last completion, every transition durable);
Celery's (bench/anchors/celery_drain.py: prefork -c 2 on RabbitMQ, acks_late, no result
backend); Procrastinate's (bench/anchors/procrastinate_drain.py: PostgreSQL from Debian's
package on its own port). The anchors run in their own virtual environment
(``var/bench/anchors-venv``, which ``make bench-anchors`` makes), outside the project's
dependencies. Printed per drain: tasks/s, CPU per task of its parts (workers, server,
database or broker) and the load average at its start; then the median of the rounds and
the ratios of the medians, each recorded as a figure (bench/figures.py) when run under
bench/run_all.py. Target: Orbit's drain >= 1.1 x Celery's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from agentcall.orbit.store.admin import Admin  # noqa: E402
from agentcall.orbit.store.db import Database  # noqa: E402
from agentcall.orbit.store.migrate import upgrade  # noqa: E402
from bench.anchors.common import Drain, load  # noqa: E402
from bench.figures import Figure, record  # noqa: E402
from bench.orbit_submit import DEFAULT_URL, bench_database  # noqa: E402
from bench.orbit_workers import (  # noqa: E402
    cpu_use,
    insert_waiting,
    measure,
    start_processes,
    wait_done,
)

ANCHORS_PYTHON = REPO / "var" / "bench" / "anchors-venv" / "bin" / "python"
TARGET_CELERY = 1.1
NAME = "anchors"


async def orbit_drain(n: int, database: str) -> Drain:
    """bench/orbit_workers.py's drain phase alone, on a fresh database."""
    async with bench_database(database, False) as url:
        text = url.render_as_string(hide_password=False)
        db = Database.open(text, pool_size=4)
        try:
            await upgrade(db)
            admin = Admin(db)
            made = await admin.init("bench", "anchors")
            from agentcall.orbit.domain.tokens import ALL_PERMISSIONS

            issued = await admin.create_token(
                made.namespace_id, ALL_PERMISSIONS, [made.queue_id], None
            )
            await insert_waiting(db, made.namespace_id, made.queue_id, n)
            began = load()
            args = SimpleNamespace(submitters=8, server_processes=1, workers=4, concurrency=128)
            with tempfile.TemporaryDirectory() as tmp:
                _, processes = start_processes(text, issued.token, [made.queue_id], args, Path(tmp))
                try:
                    pids = [p.pid for p in processes]
                    cpu = cpu_use(pids)
                    await wait_done(db, made.queue_id, n, "orbit drain")
                    used = cpu_use(pids, cpu)
                finally:
                    for process in processes:
                        process.terminate()
                    for process in processes:
                        process.wait(30)
            figures = await measure(db, made.queue_id, "drain", 0, since_lease=True)
        finally:
            await db.close()
    parts = {"server": used[0], "workers": sum(used[1:-2]), "MariaDB": used[-2]}
    return Drain("orbit", figures.count, figures.seconds, parts, began)


def anchor_drain(python: Path, script: str, n: int) -> Drain:
    done = subprocess.run(
        [str(python), str(REPO / "bench" / "anchors" / script), "--n", str(n), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return Drain.from_json(done.stdout.strip().splitlines()[-1])


def median(drains: list[Drain]) -> Drain:
    """The drain of median rate (the lower middle one for an even count)."""
    ordered = sorted(drains, key=lambda d: d.rate)
    return ordered[(len(ordered) - 1) // 2]


def report(found: dict[str, list[Drain]]) -> bool:
    mids = {name: median(drains) for name, drains in found.items()}
    rounds = len(found["orbit"])
    for name, mid in mids.items():
        rates = ", ".join(f"{d.rate:.0f}" for d in found[name])
        print(f"median    {mid.line()} (rounds: {rates} tasks/s)")
    orbit = mids["orbit"]
    met = True
    for peer, target in (("celery", TARGET_CELERY), ("procrastinate", None)):
        mid = mids[peer]
        ratio = orbit.rate / mid.rate
        print(
            f"ratio     orbit/{peer} drain {ratio:.2f} (median of {rounds}; CPU per task "
            f"orbit {orbit.cpu_ms_per_task():.2f} ms, {peer} {mid.cpu_ms_per_task():.2f} ms)"
        )
        if target is not None:
            met = ratio >= target
        record(
            Figure(
                NAME,
                f"drain of {orbit.n} no-op tasks, Orbit against {peer}",
                round(orbit.rate, 1),
                "tasks/s",
                baseline=round(mid.rate, 1),
                baseline_name=f"{peer}, {mid.cpu_ms_per_task():.2f} ms CPU per task",
                cpu_ms_per_unit=round(orbit.cpu_ms_per_task(), 3),
                per="task",
                target=None if target is None else f">= {target}x {peer}",
                met=None if target is None else ratio >= target,
                load=orbit.load,
            )
        )
    print(f"target    orbit drain >= {TARGET_CELERY}x celery's: {'met' if met else 'NOT met'}")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="tasks per drain")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three drains")
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// admin URL")
    parser.add_argument("--anchors-python", type=Path, default=ANCHORS_PYTHON)
    args = parser.parse_args()
    if not args.anchors_python.exists():
        raise SystemExit(f"no {args.anchors_python}: run `make bench-anchors` (it makes the venv)")
    print(f"n={args.n} rounds={args.rounds} cpus={os.cpu_count()} load at start {load()}")
    found: dict[str, list[Drain]] = {"orbit": [], "celery": [], "procrastinate": []}
    for index in range(args.rounds):
        for name in found:
            if name == "orbit":
                drain = asyncio.run(orbit_drain(args.n, args.database))
            else:
                drain = anchor_drain(args.anchors_python, f"{name}_drain.py", args.n)
            found[name].append(drain)
            print(f"round {index + 1}   {drain.line()}", flush=True)
    report(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
