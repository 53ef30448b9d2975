"""Benchmark: Orbit submits over HTTP on MySQL/MariaDB against a driver-level baseline.

Both phases write the same rows per submit (idempotency record + receipt, task, acceptance
event, audit) in one durable transaction, with the same concurrency:
  baseline  asyncmy directly: BEGIN; 4 INSERTs; COMMIT  (no HTTP, no validation, no digest)
  orbit     POST /v1/tasks to `orbit serve` with unique idempotency keys

    .venv/bin/python bench/orbit_submit.py [--database mysql+asyncmy://...] [--n 20000]
        [--concurrency 16]

The database URL defaults to ORBIT_TEST_MYSQL_URL; a fresh database `orbit_b_<hex>` is
created next to it (and dropped at the end unless --keep). Target: >= 1,000
submits/s and p99 < 50 ms with innodb_flush_log_at_trx_commit=1 on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncmy
import httpx
import sqlalchemy as sa
import uvloop
from sqlalchemy.engine import make_url

from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.console_viewer import console_open  # noqa: E402

DEFAULT_URL = os.environ.get(
    "ORBIT_TEST_MYSQL_URL", "mysql+asyncmy://orbit:orbit@127.0.0.1:3306/orbit"
)


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from 3 (state) on


def process_cpu(roots: set[int]) -> float:
    """CPU seconds (user + system) of `roots` and all their live descendants."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = int(fields[1])
            times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / TICK
    total, todo, seen = 0.0, list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in times:
            continue
        seen.add(pid)
        total += times[pid]
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


def database_pids() -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in ("mariadbd", "mysqld"):
                    found.add(int(entry.name))
            except OSError:
                continue
    return found


class CpuMeter:
    """CPU seconds spent during a phase by this process (the load generator or the baseline
    client), the server processes and the database server."""

    def __init__(self, server: set[int]) -> None:
        self.server, self.database = server, database_pids()
        self.start = self._sample()

    def _sample(self) -> tuple[float, float, float]:
        return (time.process_time(), process_cpu(self.server), process_cpu(self.database))

    def line(self, count: int) -> str:
        end = self._sample()
        pairs = zip(self.start, end, strict=True)
        own, server, database = (1000 * (b - a) / count for a, b in pairs)
        return (
            f"          CPU per submit: client {own:.2f} ms, server {server:.3f} ms, "
            f"database {database:.2f} ms; load average {load()}"
        )


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


@dataclass
class Result:
    name: str
    count: int
    seconds: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.count / self.seconds

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    def line(self) -> str:
        return (
            f"{self.name:9} {self.count} submits in {self.seconds:6.2f} s = "
            f"{self.rate:8.1f} submits/s  p50 {self.quantile(0.5):6.2f} ms  "
            f"p99 {self.quantile(0.99):6.2f} ms"
        )


async def drive(
    name: str, n: int, concurrency: int, one: Callable[[int], Awaitable[None]]
) -> Result:
    """Run `one(i)` for i in 0..n-1 with `concurrency` in flight; print progress."""
    numbers = iter(range(n))
    latencies: list[float] = []
    started = time.perf_counter()

    async def worker() -> None:
        for number in numbers:
            begin = time.perf_counter()
            await one(number)
            latencies.append(time.perf_counter() - begin)

    async def progress() -> None:
        while True:
            await asyncio.sleep(2)
            done = len(latencies)
            elapsed = time.perf_counter() - started
            print(f"  {name}: {done}/{n} ({done / elapsed:.0f}/s)", flush=True)

    reporter = asyncio.create_task(progress())
    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        reporter.cancel()
    return Result(name, n, time.perf_counter() - started, latencies)


async def baseline(url: sa.URL, ids: tuple[str, str, str], n: int, concurrency: int) -> Result:
    """The same four rows per submit, through asyncmy with one connection per client."""
    namespace_id, queue_id, token_id = ids
    connections = [
        await asyncmy.connect(
            host=url.host,
            port=url.port or 3306,
            user=url.username,
            password=url.password,
            database=url.database,
            autocommit=False,
        )
        for _ in range(concurrency)
    ]
    pool: asyncio.Queue[asyncmy.Connection] = asyncio.Queue()
    for connection in connections:
        pool.put_nowait(connection)
    payload = json.dumps({"source_ref": "objects/input.txt", "sequence": 9007199254740993})
    now = datetime.now(UTC).replace(tzinfo=None)

    async def one(number: int) -> None:
        task_id, key = secrets.token_hex(16), f"base-{number}"
        connection = await pool.get()
        try:
            async with connection.cursor() as cur:
                await cur.execute(
                    "INSERT INTO idempotency_records (namespace_id, operation, target, idem_key,"
                    " digest_alg, digest, task_id, status_code, receipt, created_at, expires_at)"
                    " VALUES (%s,'tasks.submit','',%s,'orbit-json-v1',%s,%s,201,%s,%s,%s)",
                    (
                        namespace_id,
                        key,
                        secrets.token_hex(32),
                        task_id,
                        payload * 3,
                        now,
                        now + timedelta(days=90),
                    ),
                )
                await cur.execute(
                    "INSERT INTO tasks (id, namespace_id, queue_id, state, revision, handler,"
                    " handler_version, payload_version, payload, available_at, deadline_at,"
                    " task_timeout_ms, recovery_safety, retry_max_attempts,"
                    " retry_initial_delay_ms, retry_max_delay_ms, retry_attempt_timeout_ms,"
                    " attempt_count, created_at, updated_at) VALUES (%s,%s,%s,'WAITING',1,"
                    "'file.convert','v1','v1',%s,%s,%s,86400000,'RECONCILE_ONLY',1,0,0,30000,0,"
                    "%s,%s)",
                    (
                        task_id,
                        namespace_id,
                        queue_id,
                        payload,
                        now,
                        now + timedelta(days=1),
                        now,
                        now,
                    ),
                )
                await cur.execute(
                    "INSERT INTO task_events (id, task_id, revision, kind, to_state, created_at)"
                    " VALUES (%s,%s,1,'ACCEPTED','WAITING',%s)",
                    (secrets.token_hex(16), task_id, now),
                )
                await cur.execute(
                    "INSERT INTO audit_log (id, namespace_id, token_id, action, task_id,"
                    " queue_id, handler, request_id, created_at) VALUES"
                    " (%s,%s,%s,'tasks.submit',%s,%s,'file.convert',%s,%s)",
                    (
                        secrets.token_hex(16),
                        namespace_id,
                        token_id,
                        task_id,
                        queue_id,
                        secrets.token_hex(16),
                        now,
                    ),
                )
            await connection.commit()
        finally:
            pool.put_nowait(connection)

    try:
        return await drive("baseline", n, concurrency, one)
    finally:
        for connection in connections:
            await connection.ensure_closed()


class Connection:
    """A minimal keep-alive HTTP/1.1 client connection: the load generator must cost less CPU
    than the server it measures (httpx costs about as much per request as the server)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def post(self, path: str, headers: str, body: bytes) -> tuple[int, bytes]:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode("ascii") + body)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return int(status_line.split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


async def over_http(port: int, token: str, queue_id: str, n: int, concurrency: int) -> Result:
    connections: asyncio.Queue[Connection] = asyncio.Queue()
    for _ in range(concurrency):
        connections.put_nowait(await Connection.open(port))
    headers = f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
    run = secrets.token_hex(4)

    async def one(number: int) -> None:
        body = (
            f'{{"queue_id":"{queue_id}","handler":"file.convert","handler_version":"v1",'
            f'"payload_version":"v1","payload":{{"source_ref":"objects/input.txt",'
            f'"sequence":9007199254740993,"n":{number}}}}}'
        ).encode()
        connection = await connections.get()
        try:
            status, answer = await connection.post(
                "/v1/tasks", f"{headers}Idempotency-Key: {run}-{number}\r\n", body
            )
        finally:
            connections.put_nowait(connection)
        check_answer(number, status, answer)

    try:
        return await drive("orbit", n, concurrency, one)
    finally:
        while not connections.empty():
            connections.get_nowait().close()


def check_answer(number: int, status: int, answer: bytes) -> None:
    """Every answer is a fresh acceptance of this very submit, numbers exact."""
    try:
        data = json.loads(answer)["data"]
        task = data["task"]
        fine = (
            status == 201
            and data["deduplicated"] is False
            and task["state"] == "WAITING"
            and task["payload"]
            == {"source_ref": "objects/input.txt", "sequence": 9007199254740993, "n": number}
        )
    except (ValueError, KeyError, TypeError):
        fine = False
    if not fine:
        raise RuntimeError(f"submit {number}: {status} {answer[:300]!r}")


async def verify_rows(url: str, queue_id: str, expected: int) -> str:
    """Each acceptance wrote its four rows: count them."""
    db = Database.open(url, pool_size=1)
    counts = []
    try:
        async with db.engine.connect() as conn:
            of_queue = "task_id IN (SELECT id FROM tasks WHERE queue_id = :q)"
            for table, where in (
                ("tasks", "queue_id = :q"),
                ("audit_log", "queue_id = :q"),
                ("task_events", of_queue),
                ("idempotency_records", of_queue),
            ):
                query = sa.text(f"SELECT COUNT(*) FROM {table} WHERE {where}")
                counts.append((await conn.execute(query, {"q": queue_id})).scalar_one())
    finally:
        await db.close()
    line = (
        f"rows      tasks {counts[0]}, audit {counts[1]}, events {counts[2]}, "
        f"idempotency {counts[3]} (expected {expected} each)"
    )
    if any(count != expected for count in counts):
        raise SystemExit(f"{line}: MISMATCH")
    return line


def group_line(port: int) -> str:
    """The submit group commit counters of one server process (from its /metrics)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    values = {
        line.split()[0]: float(line.split()[1])
        for line in text.splitlines()
        if line.startswith("orbit_submit_group")
    }
    groups = values.get("orbit_submit_groups_total", 0)
    items = values.get("orbit_submit_group_items_total", 0)
    fallbacks = values.get("orbit_submit_group_fallbacks_total", 0)
    mean = items / groups if groups else 0
    return (
        f"groups    one server process: {groups:.0f} groups, {items:.0f} submits "
        f"(mean {mean:.1f} per group), {fallbacks:.0f} fell back to single submits"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def admin_exec(admin_url: str, statement: str) -> None:
    db = Database.open(admin_url, pool_size=1)
    try:
        async with db.engine.connect() as conn:
            await conn.execute(sa.text(statement))
    finally:
        await db.close()


async def flush_setting(url: str) -> str:
    db = Database.open(url, pool_size=1)
    try:
        async with db.engine.connect() as conn:
            query = sa.text("SELECT @@innodb_flush_log_at_trx_commit, VERSION()")
            flush, version = (await conn.execute(query)).one()
    finally:
        await db.close()
    return f"innodb_flush_log_at_trx_commit={flush} server={version}"


@contextlib.asynccontextmanager
async def bench_database(admin_url: str, keep: bool) -> AsyncIterator[sa.URL]:
    """A fresh `orbit_b_<hex>` database next to `admin_url` (MySQL/MariaDB only), announced
    with its durability setting; dropped afterwards unless `keep`."""
    admin = make_url(admin_url)
    if not admin.drivername.startswith("mysql"):
        raise SystemExit("the benchmark runs on MySQL/MariaDB: --database mysql+asyncmy://...")
    name = f"orbit_b_{secrets.token_hex(4)}"
    url = admin.set(database=name)
    charset = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    await admin_exec(admin_url, f"CREATE DATABASE {name} {charset}")
    try:
        setting = await flush_setting(url.render_as_string(hide_password=False))
        print(f"database {name} on {admin.host}:{admin.port}: {setting}")
        yield url
    finally:
        if not keep:
            await admin_exec(admin_url, f"DROP DATABASE IF EXISTS {name}")


async def prepare(url: str) -> tuple[str, str, str, str]:
    db = Database.open(url, pool_size=2)
    try:
        await upgrade(db)
        made = await Admin(db).init("bench", "submits")
    finally:
        await db.close()
    return made.namespace_id, made.queue_id, made.token_id, made.token


def serve_command(url: str, port: int, pool_size: int, workers: int = 1) -> list[str]:
    """`orbit serve` as every Orbit bench starts it: JSON logs, no access lines."""
    return [
        *(sys.executable, "-m", "agentcall.orbit", "serve", "--database", url),
        *("--port", str(port), "--no-access-log", "--log-format", "json"),
        *("--pool-size", str(pool_size), "--workers", str(workers)),
    ]


def start_server(
    url: str, port: int, log: Path, pool_size: int, workers: int
) -> subprocess.Popen[bytes]:
    command = serve_command(url, port, pool_size, workers)
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"orbit serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("orbit serve did not start")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// admin URL")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="orbit serve processes (1: least CPU per submit, see docs)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument(
        "--console", action="store_true", help="keep the console open and refreshing during the run"
    )
    args = parser.parse_args()
    async with bench_database(args.database, args.keep) as url:
        url_text = url.render_as_string(hide_password=False)
        print(
            f"n={args.n} concurrency={args.concurrency} server workers={args.workers} "
            f"cpus={os.cpu_count()} load average at start {load()}",
            flush=True,
        )
        namespace_id, queue_id, token_id, token = await prepare(url_text)
        meter = CpuMeter(set())
        base = await baseline(url, (namespace_id, queue_id, token_id), args.n, args.concurrency)
        print(base.line(), flush=True)
        print(meter.line(args.n), flush=True)
        port = free_port()
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "serve.log"
            server = start_server(url_text, port, log, args.concurrency + 4, args.workers)
            try:
                await over_http(port, token, queue_id, 200, 4)  # warm-up
                meter = CpuMeter({server.pid})
                base_url = f"http://127.0.0.1:{port}"
                async with console_open(base_url, token, queue_id, args.console):
                    orbit = await over_http(port, token, queue_id, args.n, args.concurrency)
                    usage = meter.line(args.n)
                groups = group_line(port)
            finally:
                server.terminate()
                server.wait(15)
        print(orbit.line())
        print(usage)
        print(groups)
        print(await verify_rows(url_text, queue_id, 2 * args.n + 200))
        print(
            f"ratio     orbit/baseline throughput {orbit.rate / base.rate:.2f}  "
            f"p99 {orbit.quantile(0.99) / base.quantile(0.99):.2f}x"
        )
        verdict = orbit.rate >= 1000 and orbit.quantile(0.99) < 50
        print(f"target    >= 1000 submits/s and p99 < 50 ms: {'met' if verdict else 'NOT met'}")
        print(f"load average at end {load()}")


if __name__ == "__main__":
    uvloop.run(main())  # the lighter loop leaves more CPU to the server it measures
