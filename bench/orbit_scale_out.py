"""Benchmark: Orbit with several `orbit serve` processes on one MySQL/MariaDB database.

    .venv/bin/python bench/orbit_scale_out.py [--database mysql+asyncmy://...] [--n 4000]
        [--idle 100] [--workers 3] [--concurrency 64] [--submitters 6] [--batch 50]

Phases, on a fresh database `orbit_b_<hex>` (dropped at the end unless --keep):
  idle      two server processes A and B, one idle worker connected to B only; one task at a
            time submitted to B (same process: the eager path, the reference) and then to A
            (cross-process: A leases the task in its submit's transaction to the slot B's
            idle worker offered, and B delivers it; or, without an offer, A's hint wakes B's
            dispatcher): submit → started p50 and p99, on the database clock
            (attempt.started_at − task.created_at), and the remote eager counters
  scale     for 1, 2 and 3 server processes: --n no-op tasks submitted in batches round-robin
            through all of them by --submitters clients while --workers worker processes
            (spread over the servers, each knowing all of them) run them: tasks/s from the
            first submit to the last completion, the ratio to one process in the same run,
            and CPU per task of the servers, workers, MariaDB and the bench client
Targets: cross-process idle dispatch p50 < 10 ms; 2 processes >= 1.3x one process.
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

import httpx
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentcall.orbit.store.db import Database  # noqa: E402
from bench.orbit_submit import DEFAULT_URL, bench_database, free_port, serve_command  # noqa: E402
from bench.orbit_tenant import bench_tenant  # noqa: E402
from bench.orbit_workers import (  # noqa: E402
    REPO,
    Figures,
    _wait,
    breakdown,
    cpu_use,
    idle_phase,
    measure,
    submit_all,
    wait_done,
)

WORKER = [
    sys.executable,
    "-m",
    "agentcall.orbit.sdk.worker",
    "--app",
    "examples.orbit_workers:registry",
    "--log-format",
    "json",
]


LOCK_STATUS = ("Innodb_row_lock_waits", "Innodb_row_lock_time", "Innodb_deadlocks")


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all cores (/proc/stat):
    busy is everything but idle and iowait."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields) - fields[3] - fields[4]) / tick, sum(fields) / tick


async def lock_status(db: Database) -> dict[str, int]:
    """MariaDB's row lock waits, their total time (ms) and deadlocks so far: server-wide, so
    other databases' work on the same server counts too (an upper bound for Orbit's)."""
    names = ", ".join(f"'{name}'" for name in LOCK_STATUS)
    async with db.read() as conn:
        rows = (
            await conn.execute(sa.text(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"))
        ).all()
    found = {str(name): int(value) for name, value in rows}
    return {name: found.get(name, 0) for name in LOCK_STATUS}


def where_cpu_goes(used: list[float], servers: int, n: int, machine: tuple[float, float]) -> str:
    """The phase's CPU: per task by process kind, and the machine's cores busy by us and by
    everything else (other sessions' work on the same cores)."""
    server_cpu, worker_cpu, mariadb, client = (
        sum(used[:servers]),
        sum(used[servers:-2]),
        used[-2],
        used[-1],
    )
    ours = server_cpu + worker_cpu + mariadb + client
    busy, total = machine
    cores = os.cpu_count() or 1
    wall = total / cores
    return (
        f"  CPU per task: servers {server_cpu * 1000 / n:.2f} ms, workers "
        f"{worker_cpu * 1000 / n:.2f} ms, MariaDB {mariadb * 1000 / n:.2f} ms, bench client "
        f"{client * 1000 / n:.2f} ms; all {ours * 1000 / n:.2f} ms\n"
        f"  machine: {cores} cores x {wall:.2f} s, busy {busy / total:.0%} "
        f"({busy:.2f} core-s): this bench {ours:.2f} core-s ({ours / total:.0%}), other "
        f"work {max(0.0, busy - ours):.2f} core-s ({max(0.0, busy - ours) / total:.0%}); "
        f"servers {server_cpu:.2f}, MariaDB {mariadb:.2f}, workers {worker_cpu:.2f}, "
        f"client {client:.2f} core-s"
    )


COUNTED = ("orbit_leases_total", "orbit_lease_asks_empty_total", "orbit_peer_hints_received_total")


REMOTE_EAGER = (
    "orbit_remote_eager_claims_total",
    "orbit_remote_eager_leases_total",
    "orbit_worker_offers_published_total",
    "orbit_worker_offers_withdrawn_total",
)


def counted(urls: list[str], names: tuple[str, ...] = COUNTED) -> dict[str, float]:
    """The dispatch counters summed over the server processes (absent ones: NaN)."""
    sums = dict.fromkeys(names, float("nan"))
    for base in urls:
        for line in httpx.get(f"{base}/metrics", timeout=10).text.splitlines():
            name, _, value = line.partition(" ")
            if name in sums:
                sums[name] = (0.0 if sums[name] != sums[name] else sums[name]) + float(value)
    return sums


class Fleet:
    """Server processes and worker processes of one phase."""

    def __init__(self, url: str, servers: int, tmp: Path, pool: int) -> None:
        self.tmp = tmp
        self.ports = [free_port() for _ in range(servers)]
        self.servers = [
            subprocess.Popen(
                serve_command(url, port, pool),
                stdout=(tmp / f"serve-{port}.log").open("wb"),
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
            for port in self.ports
        ]
        self.workers: list[subprocess.Popen[bytes]] = []
        for base, process in zip(self.urls, self.servers, strict=True):
            _wait(
                lambda base=base: httpx.get(f"{base}/healthz", timeout=1).status_code == 200,
                process,
                f"serve {base}",
            )

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def worker(self, urls: list[str], token: str, queues: list[str], concurrency: int) -> None:
        log = self.tmp / f"worker-{len(self.workers)}-{self.ports[0]}.log"
        env = {**os.environ, "ORBIT_URL": ",".join(urls), "ORBIT_TOKEN": token}
        process = subprocess.Popen(
            [
                *WORKER,
                *[a for q in queues for a in ("--queue", q)],
                "--concurrency",
                str(concurrency),
                "--name",
                f"bench-{len(self.workers)}",
            ],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
        )
        self.workers.append(process)
        _wait(lambda: '"connected"' in log.read_text(), process, "worker")

    @property
    def pids(self) -> list[int]:
        """[servers…, workers…] for cpu_use, which reads [server, workers…, MariaDB, self]."""
        return [p.pid for p in self.servers + self.workers]

    def stop(self) -> None:
        for process in self.workers + self.servers:
            process.terminate()
        for process in self.workers + self.servers:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()


async def idle(
    db: Database, url: str, token: str, queues: tuple[str, str], n: int, tmp: Path
) -> None:
    same_queue, cross_queue = queues
    fleet = Fleet(url, 2, tmp, 16)
    try:
        a, b = fleet.urls
        fleet.worker([b], token, list(queues), 1)
        same = await idle_phase(db, b, token, same_queue, n)
        same.name = "idle B→B"
        print(same.line(), " (submit to the worker's own server)", flush=True)
        print(await breakdown(db, same_queue), flush=True)
        cross = await idle_phase(db, a, token, cross_queue, n)
        cross.name = "idle A→B"
        print(cross.line(), " (submit to A, worker on B)", flush=True)
        print(await breakdown(db, cross_queue), flush=True)
        remote = counted(fleet.urls, REMOTE_EAGER)  # NaN: code without remote eager dispatch
        print(
            "          remote eager: claims on A {:.0f}, leases delivered by B {:.0f}, offers "
            "published {:.0f}, withdrawn {:.0f}".format(*remote.values()),
            flush=True,
        )
        met = cross.q(0.5) < 10
        print(f"target    cross-process idle dispatch p50 < 10 ms: {'met' if met else 'NOT met'}")
    finally:
        fleet.stop()


async def scale(
    db: Database,
    url: str,
    token: str,
    queue_id: str,
    servers: int,
    args: argparse.Namespace,
    tmp: Path,
) -> Figures:
    fleet = Fleet(url, servers, tmp, args.submitters + 8)
    try:
        urls = fleet.urls
        for n in range(args.workers):
            k = n % servers
            fleet.worker(urls[k:] + urls[:k], token, [queue_id], args.concurrency)
        cpu, machine, locks = cpu_use(fleet.pids), machine_cpu(), await lock_status(db)
        began = time.perf_counter()
        share = args.n // servers
        await asyncio.gather(
            *(
                submit_all(
                    base,
                    token,
                    queue_id,
                    share + (args.n % servers if i == 0 else 0),
                    max(1, args.submitters // servers),
                    args.batch,
                )
                for i, base in enumerate(urls)
            )
        )
        await wait_done(db, queue_id, args.n, f"{servers} server(s)")
        used = cpu_use(fleet.pids, cpu)
        busy, total = machine_cpu()
        machine = (busy - machine[0], total - machine[1])
        waited = {k: v - locks[k] for k, v in (await lock_status(db)).items()}
        count = counted(fleet.urls)
        figures = await measure(db, queue_id, f"{servers} proc", began)
        print(figures.line(), flush=True)
        print(where_cpu_goes(used, servers, args.n, machine), flush=True)
        print(
            f"  database: {waited['Innodb_row_lock_waits']} row lock waits "
            f"({waited['Innodb_row_lock_time']} ms in all), {waited['Innodb_deadlocks']} "
            "deadlocks (server-wide)",
            flush=True,
        )
        leases, empty, hints = (count[name] for name in COUNTED)
        print(
            f"  dispatch: {leases:.0f} leases, {empty:.0f} lease asks that found nothing, "
            f"{hints:.0f} hints received",
            flush=True,
        )
        return figures
    finally:
        fleet.stop()


async def run(args: argparse.Namespace, url: sa.URL) -> None:
    url_text = url.render_as_string(hide_password=False)
    db = Database.open(url_text, pool_size=4)
    try:
        tenant = await bench_tenant(db, ["idle", "cross", "scale1", "scale2", "scale3"])
        idle_queue, cross_queue, *scale_queues = tenant.queues.values()
        with tempfile.TemporaryDirectory() as tmp:
            if args.idle:
                await idle(
                    db, url_text, tenant.token, (idle_queue, cross_queue), args.idle, Path(tmp)
                )
            results = []
            for k, queue_id in zip((1, 2, 3), scale_queues if args.n else [], strict=False):
                results.append(
                    await scale(db, url_text, tenant.token, queue_id, k, args, Path(tmp))
                )
        if not results:
            return
        one = results[0].rate
        for k, figures in zip((1, 2, 3), results, strict=True):
            print(f"ratio     {k} process(es) / 1 process: {figures.rate / one:.2f}")
        met = results[1].rate >= 1.3 * one
        print(f"target    2 processes >= 1.3x one process: {'met' if met else 'NOT met'}")
        print(f"load      {os.getloadavg()[0]:.1f} (1 min average at the end)")
    finally:
        await db.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// admin URL")
    parser.add_argument("--n", type=int, default=4000, help="tasks per scale phase")
    parser.add_argument("--idle", type=int, default=100, help="tasks per idle phase (0: skip)")
    parser.add_argument("--workers", type=int, default=3, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=64, help="attempts per worker")
    parser.add_argument("--submitters", type=int, default=6, help="concurrent HTTP clients")
    parser.add_argument(
        "--batch",
        type=int,
        default=50,
        choices=range(1, 101),
        help="tasks per POST /v1/tasks:batch (1: single submits)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    args = parser.parse_args()
    async with bench_database(args.database, args.keep) as url:
        await run(args, url)


if __name__ == "__main__":
    asyncio.run(main())
