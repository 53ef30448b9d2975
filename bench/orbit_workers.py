"""Benchmark: Orbit workers on MySQL/MariaDB — no-op tasks from submit to SUCCEEDED.

    .venv/bin/python bench/orbit_workers.py [--database mysql+asyncmy://...] [--n 10000]
        [--workers 4] [--concurrency 32] [--submitters 16] [--idle 200] [--batch 1-100]
        [--no-submit]

Phases, on a fresh database `orbit_b_<hex>` (dropped at the end unless --keep):
  baseline  --n rows drained by a plain SKIP LOCKED claim loop over asyncmy
            (BEGIN; SELECT … FOR UPDATE SKIP LOCKED LIMIT 1; UPDATE RUNNING; COMMIT;
            UPDATE SUCCEEDED; COMMIT) with --workers × 4 connections: what a minimal
            Procrastinate-style poller achieves on this machine and database
  drain     --n WAITING tasks inserted before the server starts, run by --workers
            `python -m agentcall.orbit.sdk.worker` processes (--concurrency each): the execution
            path
            alone (first lease → last completion), with server and worker CPU per task
  idle      one task at a time to an idle worker: dispatch latency submit → started, and
            where it goes (submit → leased → started → ended); then the floor of the same
            path on this machine at this moment (bench/idle_floor.py: a bare INSERT+COMMIT,
            a socket to a bare worker process, SKIP LOCKED + UPDATE) and the ratio
  orbit     --n no-op tasks submitted over HTTP by --submitters clients while the workers
            run them: submit to SUCCEEDED (skipped with --no-submit); one task per request,
            or --batch tasks per POST /v1/tasks:batch request
Dispatch latency is measured on the database clock: attempt.started_at − task.created_at.
CPU per task is read from /proc (user + system) and does not depend on the machine's load.
Targets: >= 1,000 tasks/s and idle dispatch p50 < 5 ms. The verdict line names the
submit path the orbit phase used: single submits, or batch submits (the batch endpoint, a
product path: `--batch 100`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import asyncmy
import httpx
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentcall.orbit.store.admin import Admin  # noqa: E402
from agentcall.orbit.store.db import Database  # noqa: E402
from agentcall.orbit.store.migrate import upgrade  # noqa: E402
from agentcall.orbit.store.tables import task_attempts, tasks  # noqa: E402
from bench.console_viewer import console_open  # noqa: E402
from bench.idle_floor import idle_floor, quantile  # noqa: E402
from bench.orbit_submit import (  # noqa: E402
    DEFAULT_URL,
    Connection,
    bench_database,
    free_port,
    serve_command,
)

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Figures:
    name: str
    count: int
    seconds: float
    dispatch_ms: list[float]
    floor_ms: list[float] = field(default_factory=list)  # bench/idle_floor.py, same run

    @property
    def rate(self) -> float:
        return self.count / self.seconds

    def q(self, q: float) -> float:
        return quantile(self.dispatch_ms or [float("nan")], q)

    def line(self) -> str:
        text = f"{self.name:9} {self.count} tasks in {self.seconds:6.2f} s = "
        text += f"{self.rate:8.1f} tasks/s"
        if self.dispatch_ms:
            text += f"  dispatch p50 {self.q(0.5):6.2f} ms  p99 {self.q(0.99):7.2f} ms"
        return text


def start_processes(
    url: str, token: str, queues: list[str], args: argparse.Namespace, tmp: Path
) -> tuple[str, list[subprocess.Popen[bytes]]]:
    port = free_port()
    server = subprocess.Popen(
        serve_command(url, port, args.submitters + 8, args.server_processes),
        stdout=(tmp / "serve.log").open("wb"),
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    base = f"http://127.0.0.1:{port}"
    _wait(lambda: httpx.get(f"{base}/healthz", timeout=1).status_code == 200, server, "serve")
    env = {**os.environ, "ORBIT_URL": base, "ORBIT_TOKEN": token}
    workers = []
    for index in range(args.workers):
        log = tmp / f"worker{index}.log"
        workers.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agentcall.orbit.sdk.worker",
                    "--app",
                    "examples.orbit_workers:registry",
                    *[arg for queue_id in queues for arg in ("--queue", queue_id)],
                    "--concurrency",
                    str(args.concurrency),
                    "--log-format",
                    "json",
                    "--name",
                    f"bench-{index}",
                ],
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=env,
            )
        )
    for index, process in enumerate(workers):
        log = tmp / f"worker{index}.log"
        _wait(lambda log=log: '"connected"' in log.read_text(), process, f"worker {index}")
    return base, [server, *workers]


def floor_lines(idle: Figures) -> str:
    """The bare pipeline of bench/idle_floor.py, measured right after the idle phase."""
    floor = idle.floor_ms
    p50 = quantile(floor, 0.5)
    return (
        f"floor     {len(floor)} tasks through a bare INSERT+COMMIT → socket → SKIP LOCKED "
        f"UPDATE (bench/idle_floor.py): p50 {p50:.2f} ms  p99 {quantile(floor, 0.99):.2f} ms\n"
        f"ratio     idle dispatch p50 orbit/floor {idle.q(0.5) / p50:.2f} (this machine's "
        "hop costs change by 2x from hour to hour; the ratio does not)"
    )


def leases_granted(base: str) -> tuple[float, float]:
    """(leases, of them eager) so far, from the server's /metrics."""
    found = {"orbit_leases_total": 0.0, "orbit_eager_leases_total": 0.0}
    for line in httpx.get(f"{base}/metrics", timeout=10).text.splitlines():
        name, _, value = line.partition(" ")
        if name in found:
            found[name] = float(value)
    return found["orbit_leases_total"], found["orbit_eager_leases_total"]


def leases_line(phase: str, before: tuple[float, float], after: tuple[float, float]) -> str:
    total, eager = (after[0] - before[0]), (after[1] - before[1])
    return (
        f"  {phase} leases: {total:.0f}, of them {eager:.0f} eager (in the submit's "
        "transaction, worker-protocol.md §5)"
    )


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live children (Linux /proc), seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    children = subprocess.run(
        ["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False
    ).stdout.split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(int(child)) for child in children)


def cpu_use(pids: list[int], since: list[float] | None = None) -> list[float]:
    """CPU seconds of [server, workers…, MariaDB, this process] (MariaDB 0 when not local),
    minus `since`. This process is the load generator (HTTP clients, progress polling)."""
    found = subprocess.run(
        ["pgrep", "-o", "-x", "mariadbd|mysqld"], capture_output=True, text=True, check=False
    ).stdout.split()
    now = [cpu_seconds(pid) for pid in pids] + [cpu_seconds(int(found[0])) if found else 0.0]
    now.append(time.process_time())
    return now if since is None else [a - b for a, b in zip(now, since, strict=True)]


def cpu_line(phase: str, used: list[float], n: int) -> str:
    server, workers, mariadb, client = used[0], sum(used[1:-2]), used[-2], used[-1]
    return (
        f"  {phase} CPU per task: server {server * 1000 / n:.3f} ms, workers "
        f"{workers * 1000 / n:.2f} ms, MariaDB {mariadb * 1000 / n:.2f} ms "
        "(MariaDB is shared with other work on this machine), bench client "
        f"{client * 1000 / n:.2f} ms"
    )


def _wait(ready: object, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
        try:
            if ready():  # type: ignore[operator]
                return
        except (httpx.TransportError, FileNotFoundError):
            pass
        time.sleep(0.05)
    raise SystemExit(f"{what} did not start")


def body(queue_id: str, number: int) -> str:
    return (
        f'{{"queue_id":"{queue_id}","handler":"demo.noop","handler_version":"v1",'
        f'"payload_version":"v1","payload":{{"n":{number}}},'
        f'"recovery_safety":"IDEMPOTENT"}}'
    )


async def submit_all(
    base: str, token: str, queue_id: str, n: int, clients: int, batch: int = 1
) -> None:
    """`n` submits by `clients` concurrent keep-alive HTTP connections: POST /v1/tasks one by
    one, or POST /v1/tasks:batch with `batch` (2-100) tasks per request. The minimal client of
    bench/orbit_submit.py: httpx cost about as much CPU per request as the server (2 ms per
    single submit here), which on two cores starved the system under test."""
    port = int(base.rsplit(":", 1)[1])
    headers = f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
    run, sent = secrets.token_hex(4), [0]
    groups = iter([list(range(start, min(n, start + batch))) for start in range(0, n, batch)])
    connections = [await Connection.open(port) for _ in range(clients)]

    async def one_client(connection: Connection) -> None:
        for group in groups:
            key = f"Idempotency-Key: {run}-{group[0]}\r\n"
            if batch == 1:
                path, content = "/v1/tasks", body(queue_id, group[0])
            else:
                path = "/v1/tasks:batch"
                content = '{"tasks":[' + ",".join(body(queue_id, i) for i in group) + "]}"
            status, answer = await connection.post(path, headers + key, content.encode())
            if status not in (200, 201):
                raise RuntimeError(f"submit: {status} {answer[:300]!r}")
            sent[0] += len(group)

    async def report() -> None:
        started = time.perf_counter()
        while True:
            await asyncio.sleep(2)
            rate = sent[0] / (time.perf_counter() - started)
            print(f"  submitting: {sent[0]}/{n} ({rate:.0f}/s)", flush=True)

    reporter = asyncio.create_task(report())
    try:
        await asyncio.gather(*(one_client(c) for c in connections))
    finally:
        reporter.cancel()
        for connection in connections:
            connection.close()


async def wait_done(db: Database, queue_id: str, expected: int, label: str) -> None:
    """Until `expected` tasks of the queue succeeded. Every 50 ms it asks whether any task of
    the queue is still unfinished (one index entry read), and counts the succeeded ones only
    when none is, or every 2 s for the progress line: a count every 50 ms read every
    succeeded row each time (about 100 index entries per task of a 10,000-task drain, a fifth
    of MariaDB's CPU per task), load that the drains of the anchors, which watch a file, do
    not carry."""
    c = tasks.c
    count = sa.select(sa.func.count()).where(c.queue_id == queue_id, c.state == "SUCCEEDED")
    unfinished = (
        sa.select(c.id)
        .where(c.queue_id == queue_id, c.state.in_(("WAITING", "LEASED", "RUNNING")))
        .limit(1)
    )
    started, last = time.monotonic(), time.monotonic()
    while True:
        async with db.read() as conn:
            busy = (await conn.execute(unfinished)).first() is not None
            due = time.monotonic() - last > 2
            done = None if busy and not due else (await conn.execute(count)).scalar_one()
        if done is not None and done >= expected:
            return
        if due:
            last = time.monotonic()
            print(f"  {label}: {done}/{expected} succeeded", flush=True)
        if time.monotonic() - started > 600 and done is not None:
            raise SystemExit(f"{label}: only {done}/{expected} succeeded after 10 minutes")
        await asyncio.sleep(0.05)


async def measure(
    db: Database, queue_id: str, name: str, since: float, *, since_lease: bool = False
) -> Figures:
    """Throughput (first created_at → last completed_at) and dispatch latencies of a queue;
    with `since_lease` (tasks inserted before the workers came) from the first lease, and no
    dispatch latency."""
    a = task_attempts.c
    join = tasks.join(task_attempts, a.task_id == tasks.c.id)
    query = sa.select(tasks.c.created_at, tasks.c.completed_at, a.started_at, a.leased_at)
    async with db.read() as conn:
        rows = (
            await conn.execute(
                query.select_from(join).where(tasks.c.queue_id == queue_id, a.state == "SUCCEEDED")
            )
        ).all()
    first = min(r.leased_at if since_lease else r.created_at for r in rows)
    last = max(r.completed_at for r in rows)
    dispatch = (
        [] if since_lease else [(r.started_at - r.created_at).total_seconds() * 1000 for r in rows]
    )
    return Figures(name, len(rows), (last - first).total_seconds(), dispatch)


async def breakdown(db: Database, queue_id: str) -> str:
    """Where the idle dispatch time goes: submit → leased → started → ended (p50, ms)."""
    a = task_attempts.c
    join = tasks.join(task_attempts, a.task_id == tasks.c.id)
    query = sa.select(tasks.c.created_at, a.leased_at, a.started_at, a.ended_at)
    async with db.read() as conn:
        rows = (
            await conn.execute(
                query.select_from(join).where(tasks.c.queue_id == queue_id, a.state == "SUCCEEDED")
            )
        ).all()

    def p50(pairs: list[float]) -> float:
        return sorted(pairs)[len(pairs) // 2] if pairs else float("nan")

    def ms(later: str, earlier: str) -> float:
        return p50([(getattr(r, later) - getattr(r, earlier)).total_seconds() * 1000 for r in rows])

    return (
        f"          p50 submit→leased {ms('leased_at', 'created_at'):.2f} ms, "
        f"leased→started {ms('started_at', 'leased_at'):.2f} ms, "
        f"started→ended {ms('ended_at', 'started_at'):.2f} ms"
    )


async def idle_phase(db: Database, base: str, token: str, queue_id: str, n: int) -> Figures:
    """One task at a time to an idle worker: wait for SUCCEEDED on the database (a primary-key
    read, so the server process is not loaded by polling) and a quiet pause before the next."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    state = sa.select(tasks.c.state)
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        for number in range(n):
            key = {"Idempotency-Key": secrets.token_hex(8)}
            response = await client.post(
                "/v1/tasks", content=body(queue_id, number), headers={**headers, **key}
            )
            task_id = response.json()["data"]["task"]["id"]
            while True:
                await asyncio.sleep(0.01)
                async with db.read() as conn:
                    now = (await conn.execute(state.where(tasks.c.id == task_id))).scalar_one()
                if now == "SUCCEEDED":
                    break
            await asyncio.sleep(0.02)
    return await measure(db, queue_id, "idle", 0)


async def lease_index_order(connection: asyncmy.Connection) -> str:
    """The columns of the schema's lease index after (queue_id, state): the order the
    baseline claims in, so that it reads the same index as Orbit's lease (whatever revision
    of the schema the bench runs against)."""
    async with connection.cursor() as cur:
        await cur.execute(
            "SELECT column_name FROM information_schema.statistics WHERE table_schema ="
            " DATABASE() AND table_name = 'tasks' AND index_name = 'ix_tasks_lease'"
            " ORDER BY seq_in_index"
        )
        columns = [row[0] for row in await cur.fetchall()]
    await connection.commit()
    assert columns[:2] == ["queue_id", "state"], columns
    return ", ".join(columns[2:])


async def baseline(url: sa.URL, queue_id: str, n: int, claimers: int) -> Figures:
    """Drain `n` WAITING rows (inserted by the caller) with a plain SKIP LOCKED loop."""
    connections = [
        await asyncmy.connect(
            host=url.host,
            port=url.port or 3306,
            user=url.username,
            password=url.password,
            database=url.database,
            autocommit=False,
        )
        for _ in range(claimers)
    ]
    order = await lease_index_order(connections[0])
    claim = (
        "SELECT id FROM tasks WHERE queue_id=%s AND state='WAITING' "
        f"ORDER BY {order} LIMIT 1 FOR UPDATE SKIP LOCKED"
    )
    done = 0
    started = time.perf_counter()

    async def claimer(connection: asyncmy.Connection) -> None:
        nonlocal done
        async with connection.cursor() as cur:
            await cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            while True:
                await cur.execute(claim, (queue_id,))
                row = await cur.fetchone()
                if row is None:
                    await connection.commit()
                    return
                await cur.execute(
                    "UPDATE tasks SET state='RUNNING', revision=revision+1 WHERE id=%s", (row[0],)
                )
                await connection.commit()
                await cur.execute(
                    "UPDATE tasks SET state='SUCCEEDED', revision=revision+1, "
                    "completed_at=UTC_TIMESTAMP(6) WHERE id=%s",
                    (row[0],),
                )
                await connection.commit()
                done += 1

    try:
        await asyncio.gather(*(claimer(c) for c in connections))
    finally:
        for connection in connections:
            await connection.ensure_closed()
    return Figures("baseline", done, time.perf_counter() - started, [])


async def insert_waiting(db: Database, namespace_id: str, queue_id: str, n: int) -> None:
    from agentcall.orbit.domain.ids import new_id
    from agentcall.orbit.domain.strictjson import read_json
    from agentcall.orbit.domain.submit import parse_submit, plan_times
    from agentcall.orbit.domain.task import new_task
    from agentcall.orbit.store.tasks import task_row

    request = parse_submit(read_json(body(queue_id, 0).encode()))
    for start in range(0, n, 500):
        async with db.write() as conn:
            now = await db.now(conn)
            times = plan_times(request, now)
            rows = [
                task_row(new_task(new_id(), namespace_id, request, times, now))
                for _ in range(start, min(n, start + 500))
            ]
            await conn.execute(tasks.insert(), rows)


async def run(args: argparse.Namespace, url: sa.URL) -> None:
    url_text = url.render_as_string(hide_password=False)
    db = Database.open(url_text, pool_size=4)
    try:
        await upgrade(db)
        admin = Admin(db)
        made = await admin.init("bench", "workers")
        idle_queue = await admin.create_queue(made.namespace_id, "idle")
        base_queue = await admin.create_queue(made.namespace_id, "baseline")
        drain_queue = await admin.create_queue(made.namespace_id, "drain")
        from agentcall.orbit.domain.tokens import ALL_PERMISSIONS

        issued = await admin.create_token(
            made.namespace_id, ALL_PERMISSIONS, [made.queue_id, idle_queue, drain_queue], None
        )
        await insert_waiting(db, made.namespace_id, base_queue, args.n)
        base = await baseline(url, base_queue, args.n, args.workers * 4)
        print(base.line(), flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            await insert_waiting(db, made.namespace_id, drain_queue, args.n)
            queues = Queues(made.queue_id, idle_queue, drain_queue)
            drain, idle, orbit = await _orbit(db, issued.token, queues, args, url_text, Path(tmp))
        print(drain.line())
        print(idle.line())
        print(await breakdown(db, idle_queue))
        print(floor_lines(idle))
        print(f"ratio     drain/baseline throughput {drain.rate / base.rate:.2f}")
        if orbit is None:
            return
        print(orbit.line())
        print(f"ratio     orbit/baseline throughput {orbit.rate / base.rate:.2f}")
        met = orbit.rate >= 1000 and idle.q(0.5) < 5
        verdict = "met" if met else "NOT met"
        how = (
            "single submits, POST /v1/tasks"
            if args.batch == 1
            else f"batch submits, POST /v1/tasks:batch with {args.batch} per request"
        )
        print(f"target    >= 1000 tasks/s and idle dispatch p50 < 5 ms ({how}): {verdict}")
        print(f"load      {os.getloadavg()[0]:.1f} (1 min average at the end)")
    finally:
        await db.close()


@dataclass(frozen=True)
class Queues:
    orbit: str
    idle: str
    drain: str


async def _orbit(
    db: Database, token: str, queues: Queues, args: argparse.Namespace, url: str, tmp: Path
) -> tuple[Figures, Figures, Figures | None]:
    server_base, processes = start_processes(url, token, [queues.orbit, queues.drain], args, tmp)
    try:
        pids = [p.pid for p in processes]
        cpu = cpu_use(pids)
        await wait_done(db, queues.drain, args.n, "drain")
        drain = await measure(db, queues.drain, "drain", 0, since_lease=True)
        print(cpu_line("drain", cpu_use(pids, cpu), args.n), flush=True)
        extra = subprocess.Popen(  # a worker on the idle queue only
            [
                sys.executable,
                "-m",
                "agentcall.orbit.sdk.worker",
                "--app",
                "examples.orbit_workers:registry",
                "--queue",
                queues.idle,
                "--concurrency",
                "1",
                "--log-format",
                "json",
            ],
            stdout=(tmp / "idle.log").open("wb"),
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env={**os.environ, "ORBIT_URL": server_base, "ORBIT_TOKEN": token},
        )
        processes.append(extra)
        _wait(lambda: '"connected"' in (tmp / "idle.log").read_text(), extra, "idle worker")
        before = leases_granted(server_base)
        idle = await idle_phase(db, server_base, token, queues.idle, args.idle)
        print(leases_line("idle", before, leases_granted(server_base)), flush=True)
        idle.floor_ms = await idle_floor(sa.make_url(url), args.idle)
        if args.no_submit:
            return drain, idle, None
        pids = [p.pid for p in processes]
        cpu = cpu_use(pids)
        before = leases_granted(server_base)
        began = time.perf_counter()
        async with console_open(server_base, token, queues.orbit, args.console):
            await submit_all(server_base, token, queues.orbit, args.n, args.submitters, args.batch)
            how = (
                "POST /v1/tasks"
                if args.batch == 1
                else f"POST /v1/tasks:batch, {args.batch} per request"
            )
            print(
                f"  submitted {args.n} in {time.perf_counter() - began:.2f} s ({how})", flush=True
            )
            await wait_done(db, queues.orbit, args.n, "orbit")
        print(cpu_line("orbit", cpu_use(pids, cpu), args.n), flush=True)
        print(leases_line("orbit", before, leases_granted(server_base)), flush=True)
        return drain, idle, await measure(db, queues.orbit, "orbit", began)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// admin URL")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=128, help="attempts per worker")
    parser.add_argument("--submitters", type=int, default=16, help="concurrent HTTP clients")
    parser.add_argument("--idle", type=int, default=200, help="tasks of the idle phase")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument(
        "--console",
        action="store_true",
        help="keep the console open and refreshing during the submit phase",
    )
    parser.add_argument(
        "--server-processes",
        type=int,
        default=1,
        help="orbit serve --workers (each process has its own dispatcher)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=1,
        choices=range(1, 101),
        metavar="1-100",
        help="tasks per submit request (>1: POST /v1/tasks:batch)",
    )
    parser.add_argument(
        "--no-submit",
        action="store_true",
        help="skip the submit phase (baseline, drain and idle only)",
    )
    args = parser.parse_args()
    async with bench_database(args.database, args.keep) as url:
        print(
            f"n={args.n} workers={args.workers}x{args.concurrency} submitters={args.submitters} "
            f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f}",
            flush=True,
        )
        await run(args, url)


if __name__ == "__main__":
    asyncio.run(main())
