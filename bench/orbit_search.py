"""Benchmark: the first page of each task search filter on MariaDB with 1,000,000 tasks.

Bulk-loads `--tasks` tasks (default 1,000,000) into one queue of a fresh database with
multi-row INSERTs through the store's row mapping (not the API), varied the way a busy queue
is: 50 handlers with 3 versions each, a random business key per task (`order-<8 hex>`), 70 %
SUCCEEDED, 10 % FAILED, 5 % NEEDS_REVIEW, 5 % CANCELLED, 10 % WAITING, 20 error codes on the
failed ones, created over about 29 days and completed up to an hour later. Then, against a
real `orbit serve`, `GET /v1/tasks` asks the first page (20 tasks) of each filter `--queries`
times with varied values, one request at a time, and prints p50/p99 and the rows returned
per filter, and the EXPLAIN plan of each filter's query. Target: every filter's p99 < 100 ms.

    .venv/bin/python bench/orbit_search.py [--database mysql+asyncmy://...] [--tasks 1000000]
        [--queries 100] [--keep] [--existing orbit_b_<hex>] [--only completed_hour ...]
    .venv/bin/python bench/orbit_search.py --sqlite-plans [--tasks 200000]

The database URL defaults to ORBIT_TEST_MYSQL_URL; a fresh database `orbit_b_<hex>` is
created next to it and dropped at the end unless --keep; `--existing NAME` measures a
database kept by an earlier run again, without loading. `--sqlite-plans` loads the same mix
into a temporary SQLite file and prints each filter's `EXPLAIN QUERY PLAN` only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import make_url

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.search import parse_filter
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import new_task
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.search import page_query
from agentcall.orbit.store.tables import tasks as task_table
from agentcall.orbit.store.tasks import task_row

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.orbit_submit import (  # noqa: E402
    DEFAULT_URL,
    bench_database,
    free_port,
    load,
    prepare,
    start_server,
)

HANDLERS = [f"h{n:02d}.run" for n in range(50)]
VERSIONS = ["v1", "v2", "v3"]
ERRORS = [f"E_{n:02d}" for n in range(20)]
STATES = ["SUCCEEDED"] * 14 + ["FAILED"] * 2 + ["NEEDS_REVIEW", "CANCELLED"] + ["WAITING"] * 2
SPACING = timedelta(milliseconds=2500)  # 1,000,000 tasks over about 29 days
PAGE = 20
TARGET_MS = 100.0
Params = dict[str, str]


def template(namespace_id: str, queue_id: str, now: datetime) -> dict[str, Any]:
    """One task row as the store writes it (the others are copies with their own values)."""
    body = {
        "queue_id": queue_id,
        "handler": HANDLERS[0],
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {"order": 1},
    }
    request = parse_submit(read_json_text(json.dumps(body)))
    return task_row(new_task(new_id(), namespace_id, request, plan_times(request, now), now))


def rows(base: dict[str, Any], start: int, count: int, now: datetime) -> list[dict[str, Any]]:
    """Tasks `start` .. `start + count - 1`: task n was created n * SPACING before `now`."""
    made = []
    rng = random.Random(start)
    for n in range(start, start + count):
        created = now - n * SPACING
        state = STATES[n % len(STATES)]
        finished = state not in ("WAITING",)
        failed = state in ("FAILED", "NEEDS_REVIEW")
        row = dict(base)
        row.update(
            id=f"{n:012x}{rng.getrandbits(80):020x}",
            state=state,
            handler=HANDLERS[n % 50],
            handler_version=VERSIONS[(n // 50) % 3],
            business_key=f"order-{rng.getrandbits(32):08x}",
            error_code=ERRORS[(n // 20) % 20] if failed else None,
            created_at=created,
            updated_at=created,
            available_at=created,
            completed_at=created + timedelta(seconds=rng.randrange(3600)) if finished else None,
        )
        made.append(row)
    return made


async def bulk_load(url: str, base: dict[str, Any], total: int, now: datetime) -> list[str]:
    """Insert `total` tasks in multi-row INSERTs of 5,000; returns some business keys."""
    db = Database.open(url, pool_size=1)
    keys: list[str] = []
    began = time.monotonic()
    try:
        for start in range(0, total, 5000):
            batch = rows(base, start, min(5000, total - start), now)
            keys.extend(r["business_key"] for r in batch[:: max(1, total // 2000)])
            async with db.engine.begin() as conn:
                await conn.execute(sa.text("SET SESSION unique_checks = 0"))
                await conn.execute(task_table.insert(), batch)
            if (start // 5000) % 20 == 19:
                print(f"loaded {start + len(batch):,} tasks", flush=True)
        async with db.engine.connect() as conn:
            await conn.execute(sa.text("ANALYZE TABLE tasks"))
    finally:
        await db.close()
    seconds = time.monotonic() - began
    print(f"bulk load {total:,} tasks in {seconds:.1f} s = {total / seconds:,.0f} tasks/s")
    return keys


def cases(keys: list[str], now: datetime, total: int) -> dict[str, Callable[[], Params]]:
    """Each filter with a generator of varied values."""
    span = total * SPACING
    pick = random.Random(7)

    def day() -> Params:
        start = now - pick.random() * span
        return {"created_from": format_time(start), "created_before": format_time(start + DAY)}

    def hour() -> Params:
        start = now - pick.random() * span
        return {
            "completed_from": format_time(start),
            "completed_before": format_time(start + timedelta(hours=1)),
        }

    return {
        "handler": lambda: {"handler": pick.choice(HANDLERS)},
        "handler_version": lambda: {
            "handler": pick.choice(HANDLERS),
            "handler_version": pick.choice(VERSIONS),
        },
        "business_key": lambda: {"business_key": pick.choice(keys)},
        "key_prefix_narrow": lambda: {"business_key_prefix": pick.choice(keys)[:9]},
        "key_prefix_wide": lambda: {"business_key_prefix": pick.choice(keys)[:7]},
        "error_code": lambda: {"error_code": pick.choice(ERRORS)},
        "state": lambda: {"state": pick.choice(["FAILED", "WAITING", "NEEDS_REVIEW"])},
        "state_error": lambda: {"state": "FAILED", "error_code": pick.choice(ERRORS)},
        "created_day": day,
        "completed_hour": hour,
    }


DAY = timedelta(days=1)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(
    port: int, token: str, queue_id: str, make: Callable[[], Params], n: int
) -> tuple[list[float], list[int]]:
    """`n` first pages of the filter, one at a time: their latencies (ms) and sizes."""
    latencies, sizes = [], []
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        for number in range(n + 3):  # three warm-up requests
            params = {"queue_id": queue_id, "limit": str(PAGE), **make()}
            began = time.perf_counter()
            response = await http.get("/v1/tasks", params=params, headers=headers)
            elapsed = (time.perf_counter() - began) * 1000
            if response.status_code != 200:
                raise SystemExit(f"GET /v1/tasks {params} -> {response.status_code}")
            if number >= 3:
                latencies.append(elapsed)
                sizes.append(len(response.json()["data"]["items"]))
    return latencies, sizes


async def explain(url: str, queue_id: str, params: Params) -> Iterator[str]:
    """The EXPLAIN rows of the first page's query of `params`."""
    where = parse_filter({"queue_id": queue_id, **params})
    compiled = page_query(where, None, PAGE + 1).compile(
        dialect=mysql.dialect(), compile_kwargs={"literal_binds": True}
    )
    db = Database.open(url, pool_size=1)
    try:
        async with db.engine.connect() as conn:
            result = await conn.execute(sa.text(f"EXPLAIN {compiled}"))
            names, found = list(result.keys()), result.all()
    finally:
        await db.close()
    wanted = ("type", "key", "key_len", "rows", "Extra")
    return ("  ".join(f"{k}={row[names.index(k)]}" for k in wanted if k in names) for row in found)


async def sqlite_plans(total: int) -> None:
    """The `EXPLAIN QUERY PLAN` of each filter's first page on SQLite, over `total` tasks of
    the same mix in a fresh database file (ANALYZEd, as the planner sees a busy queue)."""
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'search.db'}"
        namespace_id, queue_id, _, _ = await prepare(url)
        now = datetime.now(UTC).replace(microsecond=0)
        base = template(namespace_id, queue_id, now)
        db = Database.open(url, pool_size=1)
        try:
            keys: list[str] = []
            for start in range(0, total, 5000):
                batch = rows(base, start, min(5000, total - start), now)
                keys.extend(r["business_key"] for r in batch[:: max(1, total // 2000)])
                async with db.engine.begin() as conn:
                    await conn.execute(task_table.insert(), batch)
            async with db.engine.begin() as conn:
                await conn.execute(sa.text("ANALYZE"))
            print(f"SQLite plans over {total:,} tasks", flush=True)
            for name, make in cases(keys, now, total).items():
                where = parse_filter({"queue_id": queue_id, **make()})
                compiled = page_query(where, None, PAGE + 1).compile(
                    dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}
                )
                async with db.engine.connect() as conn:
                    plan = await conn.execute(sa.text(f"EXPLAIN QUERY PLAN {compiled}"))
                    details = [str(row[-1]) for row in plan.all()]
                print(f"{name:18} plan: {'; '.join(details)}", flush=True)
        finally:
            await db.close()


async def loaded(url: str) -> tuple[str, str, list[str], datetime, int]:
    """What a database loaded earlier holds (--existing): a new read token of its queue, the
    queue, some business keys, the newest creation time and the number of tasks."""
    db = Database.open(url, pool_size=1)
    try:
        async with db.engine.connect() as conn:
            first = "SELECT namespace_id, queue_id FROM tasks LIMIT 1"
            namespace_id, queue_id = (await conn.execute(sa.text(first))).one()
            some = "SELECT business_key FROM tasks LIMIT 2000"
            keys = list((await conn.execute(sa.text(some))).scalars())
            newest = "SELECT MAX(created_at), COUNT(*) FROM tasks"
            now, total = (await conn.execute(sa.text(newest))).one()
        issued = await Admin(db).create_token(namespace_id, [Permission.READ], [queue_id], None)
    finally:
        await db.close()
    return issued.token, queue_id, keys, now.replace(tzinfo=UTC), int(total)


async def report(args: argparse.Namespace, url: str) -> bool:
    if args.existing:
        token, queue_id, keys, now, total = await loaded(url)
    else:
        namespace_id, queue_id, _, token = await prepare(url)
        now, total = datetime.now(UTC).replace(microsecond=0), args.tasks
        keys = await bulk_load(url, template(namespace_id, queue_id, now), total, now)
    filters = cases(keys, now, total)
    port = free_port()
    met = True
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(url, port, Path(tmp) / "serve.log", 8, 1)
        try:
            for name, make in filters.items():
                if args.only and name not in args.only:
                    continue
                latencies, sizes = await measure(port, token, queue_id, make, args.queries)
                p50, p99 = quantile(latencies, 0.5), quantile(latencies, 0.99)
                met = met and p99 < TARGET_MS
                print(
                    f"{name:18} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  "
                    f"rows/page {min(sizes)}-{max(sizes)}",
                    flush=True,
                )
                for line in await explain(url, queue_id, make()):
                    print(f"{'':18} plan: {line}")
        finally:
            server.terminate()
            server.wait(15)
    return met


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// admin URL")
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100, help="first pages per filter")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--existing", help="a database this benchmark loaded and kept")
    parser.add_argument("--only", action="append", help="this filter only (repeatable)")
    parser.add_argument(
        "--sqlite-plans", action="store_true", help="print SQLite's plans of --tasks tasks only"
    )
    args = parser.parse_args()
    if args.sqlite_plans:
        await sqlite_plans(args.tasks)
        return
    print(f"tasks={args.tasks:,} cpus={os.cpu_count()} load average at start {load()}")
    if args.existing:
        url_text = make_url(args.database).set(database=args.existing)
        met = await report(args, url_text.render_as_string(hide_password=False))
    else:
        async with bench_database(args.database, args.keep) as url:
            met = await report(args, url.render_as_string(hide_password=False))
    verdict = "met" if met else "NOT met"
    print(f"target    every filter's first page p99 < {TARGET_MS:.0f} ms: {verdict}")
    print(f"load average at end {load()}")


if __name__ == "__main__":
    asyncio.run(main())
