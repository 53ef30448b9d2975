"""Benchmark: Orbit schedules on MySQL/MariaDB, 10,000 of them, against a plain submit
measured in the same run, with one `orbit serve`:

  submit    plain POST /v1/tasks (16 clients): the server CPU per submit, the baseline
  idle      10,000 active schedules none of which is due for a day: the server's CPU (% of
            one core) and the queries per second it sends (MariaDB's global `Questions`
            counter, minus the same counter over an equal window with the server stopped:
            the database is shared with other users), against the same server idle before
            the schedules were written (the schedules' own cost is the difference)
  firing    10,000 active schedules every --interval (anchors spread evenly, overlap allow,
            no worker: the tasks stay WAITING) for --seconds: the firing lag (fired_at −
            nominal_at of every firing record) and the server CPU per firing, beside
            the CPU per plain submit. The schedules are written straight into the store
            (creating them is not what is measured).

    .venv/bin/python bench/orbit_schedules.py [--database mysql+asyncmy://...]
        [--schedules 10000] [--interval 60] [--seconds 90] [--idle-seconds 30]

The database URL defaults to ORBIT_TEST_MYSQL_URL; a fresh database `orbit_b_<hex>` is
created next to it (and dropped at the end unless --keep). Targets: firing lag p99 < 1 s,
idle CPU < 2 % of a core (docs/orbit/schedules.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
import uvloop

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.schedule_records import ScheduleRow
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import parse_submit, submit_document
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.schedules import schedule_values
from agentcall.orbit.store.tables import schedule_firings, schedules

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.figures import Figure, record  # noqa: E402
from bench.orbit_submit import (  # noqa: E402
    DEFAULT_URL,
    bench_database,
    free_port,
    load,
    over_http,
    prepare,
    process_cpu,
    start_server,
)

NAME = "orbit_schedules"
CONCURRENCY = 16


def _template(queue_id: str) -> str:
    body = {
        "queue_id": queue_id,
        "handler": "report.build",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {"report": "daily"},
    }
    return dumps(submit_document(parse_submit(read_json(json.dumps(body).encode()))))


async def create_schedules(
    url: str,
    namespace_id: str,
    queue_id: str,
    n: int,
    spec: Callable[[int], tuple[int, datetime]],
) -> list[str]:
    """`n` active schedules (`spec(i)`: interval in ms and anchor), overlap allow, written
    straight into the store in batches of 1000 (the API's create is one round trip each and
    is not what is measured); their ids."""
    template = _template(queue_id)
    ids: list[str] = []
    db = Database.open(url, pool_size=1)
    began = time.perf_counter()
    try:
        for first in range(0, n, 1000):
            async with db.write() as conn:
                now = await db.now(conn)
                rows = [_row(namespace_id, queue_id, template, *spec(i), now) for i in
                        range(first, min(n, first + 1000))]  # fmt: skip
                await conn.execute(schedules.insert(), [schedule_values(row) for row in rows])
            ids += [row.id for row in rows]
    finally:
        await db.close()
    print(f"created   {n} schedules in {time.perf_counter() - began:.1f} s", flush=True)
    return ids


def _row(
    namespace_id: str, queue_id: str, template: str, interval_ms: int, anchor: datetime,
    now: datetime,
) -> ScheduleRow:  # fmt: skip
    spec = json.dumps({"interval_ms": interval_ms, "anchor_at": format_time(anchor)})
    return ScheduleRow(
        new_id(), namespace_id, queue_id, 1, "active", None, template, spec, None, None, 0,
        300_000, "allow", anchor, now, now,
    )  # fmt: skip


async def firing_lags(url: str, ids: list[str], since: datetime, until: datetime) -> list[float]:
    """fired_at − nominal_at (s) of every scheduled firing of a slot in [since, until)."""
    f = schedule_firings.c
    query = sa.select(f.nominal_at, f.fired_at).where(
        f.kind == "scheduled", f.outcome == "fired", f.nominal_at >= since, f.nominal_at < until
    )
    wanted, lags = set(ids), []
    db = Database.open(url, pool_size=1)
    try:
        async with db.read() as conn:
            rows = await conn.execute(query.add_columns(f.schedule_id))
            for nominal, fired, schedule_id in rows:
                if schedule_id in wanted:
                    lags.append((fired - nominal).total_seconds())
    finally:
        await db.close()
    return lags


async def questions(url: str) -> int:
    db = Database.open(url, pool_size=1)
    try:
        async with db.engine.connect() as conn:
            row = (await conn.execute(sa.text("SHOW GLOBAL STATUS LIKE 'Questions'"))).one()
    finally:
        await db.close()
    return int(row[1])


async def window(url: str, pid: int, seconds: float) -> tuple[float, float]:
    """The server's CPU (% of one core) and MariaDB's queries/s over `seconds`."""
    cpu, asked, began = process_cpu({pid}), await questions(url), time.monotonic()
    await asyncio.sleep(seconds)
    elapsed = time.monotonic() - began
    spent = process_cpu({pid}) - cpu
    rate = (await questions(url) - asked - 1) / elapsed  # less our own second SHOW STATUS
    return 100 * spent / elapsed, rate


async def idle_phase(url: str, pid: int, seconds: float, what: str) -> tuple[float, float]:
    """The idle window, then the same window with the server stopped (SIGSTOP): what other
    users of the database ask meanwhile; the server's queries/s is the difference."""
    cpu, with_server = await window(url, pid, seconds)
    os.kill(pid, signal.SIGSTOP)
    try:
        _, background = await window(url, pid, seconds)
    finally:
        os.kill(pid, signal.SIGCONT)
    print(
        f"idle      {what}: server CPU {cpu:.2f} % of a core; MariaDB {with_server:.1f} "
        f"queries/s with the server, {background:.1f} without (other users) over "
        f"{seconds:.0f} s; load {load()}",
        flush=True,
    )
    return cpu, max(0.0, with_server - background)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def run(args: argparse.Namespace, url: str) -> bool:
    namespace_id, queue_id, _, token = await prepare(url)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(url, port, Path(tmp) / "serve.log", CONCURRENCY + 4, 1)
        try:
            return await phases(args, url, server.pid, port, token, (namespace_id, queue_id))
        finally:
            server.terminate()
            server.wait(15)


async def phases(
    args: argparse.Namespace, url: str, pid: int, port: int, token: str, tenant: tuple[str, str]
) -> bool:
    n, (namespace_id, queue_id) = args.schedules, tenant
    await over_http(port, token, queue_id, 200, 4)  # warm-up
    cpu = process_cpu({pid})
    plain = await over_http(port, token, queue_id, args.submits, CONCURRENCY)
    per_submit = 1000 * (process_cpu({pid}) - cpu) / args.submits
    print(f"{plain.line()}; server CPU {per_submit:.2f} ms per submit; load {load()}", flush=True)
    await asyncio.sleep(5)  # let the submits' follow-up work settle
    bare_cpu, bare_queries = await idle_phase(url, pid, args.idle_seconds, "no schedules")

    later = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    began = time.monotonic()
    await create_schedules(url, namespace_id, queue_id, n, lambda _: (86_400_000, later))
    creating = time.monotonic() - began  # the firing set's first slots come after its creation
    await asyncio.sleep(5)  # let the creates' wake-ups settle
    idle_cpu, idle_queries = await idle_phase(url, pid, args.idle_seconds, f"{n} schedules")
    print(
        f"idle      cost of {n} schedules not due: {idle_cpu - bare_cpu:+.2f} % of a core, "
        f"{idle_queries - bare_queries:+.1f} queries/s (against the same server without them)",
        flush=True,
    )

    interval_ms = args.interval * 1000
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1.5 * creating + 10)

    def spread(number: int) -> tuple[int, datetime]:
        return interval_ms, start + timedelta(milliseconds=number * interval_ms // n)

    ids = await create_schedules(url, namespace_id, queue_id, n, spread)
    await asyncio.sleep(max(0.0, (start - datetime.now(UTC)).total_seconds()))
    cpu, began = process_cpu({pid}), time.monotonic()
    await asyncio.sleep(args.seconds)
    spent, elapsed = process_cpu({pid}) - cpu, time.monotonic() - began
    until = start + timedelta(seconds=args.seconds)
    lags = await firing_lags(url, ids, start, until)  # the slots of the window
    per_firing = 1000 * spent / max(1, len(lags))
    p50, p99 = quantile(lags, 0.5) * 1000, quantile(lags, 0.99) * 1000
    expected = n * args.seconds // args.interval
    print(
        f"firing    {len(lags)} firings of {n} schedules every {args.interval} s in "
        f"{elapsed:.0f} s (about {expected} due); lag p50 {p50:.0f} ms p99 {p99:.0f} ms "
        f"max {max(lags, default=0) * 1000:.0f} ms; load {load()}",
        flush=True,
    )
    print(
        f"ratio     server CPU per firing {per_firing:.2f} ms / per plain submit "
        f"{per_submit:.2f} ms = {per_firing / per_submit:.2f}",
        flush=True,
    )
    idle_cost = idle_cpu - bare_cpu
    _record(p50, p99, per_firing, per_submit, idle_cost, idle_queries - bare_queries)
    lag_met, idle_met = p99 < 1000 and len(lags) >= 0.9 * expected, idle_cost < 2.0
    print(f"target    firing lag p99 < 1 s: {'met' if lag_met else 'NOT met'}")
    print(
        f"target    idle CPU of the schedules < 2 % of a core: {'met' if idle_met else 'NOT met'}"
    )
    return lag_met and idle_met


def _record(
    p50: float, p99: float, per_firing: float, per_submit: float, idle: float, queries: float
) -> None:
    record(Figure(NAME, "firing lag p50", p50, "ms", higher_is_better=False))
    record(Figure(NAME, "firing lag p99", p99, "ms", False, target="< 1000 ms", met=p99 < 1000))
    record(
        Figure(
            NAME,
            "server CPU per firing",
            per_firing,
            "ms",
            False,
            baseline=per_submit,
            baseline_name="server CPU per plain submit",
        )
    )
    record(
        Figure(
            NAME,
            "idle CPU of the schedules",
            idle,
            "% of a core",
            False,
            target="< 2 %",
            met=idle < 2,
        )  # fmt: skip
    )
    record(Figure(NAME, "idle queries of the schedules", queries, "queries/s", False))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// admin URL")
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--interval", type=int, default=60, help="seconds between slots")
    parser.add_argument("--seconds", type=int, default=90, help="length of the firing phase")
    parser.add_argument("--idle-seconds", type=float, default=30)
    parser.add_argument("--submits", type=int, default=5000, help="plain submits (baseline)")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    args = parser.parse_args()
    print(
        f"schedules={args.schedules} interval={args.interval} s firing phase {args.seconds} s "
        f"cpus={os.cpu_count()} load average at start {load()}",
        flush=True,
    )
    async with bench_database(args.database, args.keep) as url:
        met = await run(args, url.render_as_string(hide_password=False))
    print(f"load average at end {load()} (targets {'met' if met else 'NOT met'})")


if __name__ == "__main__":
    uvloop.run(main())
