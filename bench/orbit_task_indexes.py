"""Benchmark: what each secondary index of Orbit's tasks table costs its writes.

The tasks table is built several times, each in a database of its own: with every index the
schema has ("all"), with every index but one (one variant per index added for flow control
and search), and with none of those ("before": the indexes the table had before flow control
and search). Each round writes --n task rows to every variant, in an order reversed every
other round, the way the hot path writes them: INSERTs of --group rows per transaction (a
submit group), then per group one UPDATE per task to LEASED (a lease) and one to SUCCEEDED
with completed_at (a finish). Prints per variant the median microseconds per row of each
phase over the rounds and its ratio to "all"; an index's cost is what removing it saves.

    .venv/bin/python bench/orbit_task_indexes.py [--database mysql+asyncmy://...|sqlite]
        [--n 4000] [--group 16] [--rounds 5]

MySQL/MariaDB (the default, ORBIT_TEST_MYSQL_URL): databases `orbit_i_<hex>_<variant>` next
to the URL's, dropped at the end. `--database sqlite`: files in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import new_task
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.search_schema import SEARCH_INDEXES
from agentcall.orbit.store.tables import tasks
from agentcall.orbit.store.tasks import task_row
from agentcall.orbit.store.types import MYSQL_TABLE_ARGS

DEFAULT_URL = os.environ.get(
    "ORBIT_TEST_MYSQL_URL", "mysql+asyncmy://orbit:orbit@127.0.0.1:3306/orbit"
)
NEW_INDEXES = ("ix_tasks_fair", *SEARCH_INDEXES)  # added by flow control and search
PHASES = ("insert", "lease", "finish")


def variants() -> dict[str, frozenset[str]]:
    """Variant name -> the indexes it leaves out."""
    named = {"all": frozenset[str]()}
    named.update({f"-{name.removeprefix('ix_tasks_')}": frozenset({name}) for name in NEW_INDEXES})
    named["before"] = frozenset(NEW_INDEXES)
    return named


def table_without(left_out: frozenset[str]) -> sa.Table:
    """The tasks table (columns, primary key, indexes) without foreign keys or `left_out`."""
    columns = [
        sa.Column(
            column.name,
            column.type,
            primary_key=column.primary_key,
            nullable=column.nullable,
            server_default=column.server_default,
        )
        for column in tasks.columns
    ]
    indexes = [
        sa.Index(index.name, *(column.name for column in index.columns))
        for index in tasks.indexes
        if index.name not in left_out
    ]
    return sa.Table("tasks", sa.MetaData(), *columns, *indexes, **MYSQL_TABLE_ARGS)


def task_rows(n: int, queue_id: str) -> list[dict[str, Any]]:
    now = datetime.now(UTC).replace(microsecond=0)
    body = {
        "queue_id": queue_id,
        "handler": "file.convert",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {"source_ref": "objects/input.txt", "sequence": 9007199254740993},
    }
    request = parse_submit(body)
    rows = []
    for number in range(n):
        at = now + timedelta(microseconds=number)
        task = new_task(secrets.token_hex(16), "n" * 32, request, plan_times(request, at), at)
        rows.append(task_row(task))
    return rows


async def write(db: Database, table: sa.Table, rows: list[dict[str, Any]], group: int) -> list:
    """Seconds per phase for `rows`, each group of `group` rows in its own transactions."""
    c = table.c
    lease = sa.update(table).where(c.id == sa.bindparam("tid"))
    lease = lease.values(state="LEASED", revision=2, attempt_count=1, lease_count=1)
    finish = sa.update(table).where(c.id == sa.bindparam("tid"))
    finish = finish.values(state="SUCCEEDED", revision=3, completed_at=sa.bindparam("done"))
    groups = [rows[i : i + group] for i in range(0, len(rows), group)]
    spent = []
    for phase in PHASES:
        began = time.perf_counter()
        for chunk in groups:
            async with db.engine.begin() as conn:
                if phase == "insert":
                    await conn.execute(sa.insert(table), chunk)
                    continue
                for row in chunk:
                    params = {"tid": row["id"], "done": row["created_at"]}
                    await conn.execute(lease if phase == "lease" else finish, params)
        spent.append(time.perf_counter() - began)
    return spent


async def open_variants(database: str, tmp: Path) -> dict[str, tuple[Database, str | None]]:
    """One empty database per variant; with the MySQL/MariaDB database name to drop."""
    opened: dict[str, tuple[Database, str | None]] = {}
    run = secrets.token_hex(3)
    admin = None if database == "sqlite" else Database.open(database, pool_size=1)
    for number, (name, left_out) in enumerate(variants().items()):
        if admin is None:
            db, dropped = Database.open(f"sqlite+aiosqlite:///{tmp}/{number}.db"), None
        else:
            dropped = f"orbit_i_{run}_{number}"
            async with admin.engine.begin() as conn:
                await conn.execute(sa.text(f"CREATE DATABASE {dropped} CHARACTER SET utf8mb4"))
            db = Database.open(make_url(database).set(database=dropped).render_as_string(False))
        async with db.engine.begin() as conn:
            await conn.run_sync(table_without(left_out).metadata.create_all)
        opened[name] = (db, dropped)
    if admin is not None:
        await admin.close()
    return opened


async def close_variants(database: str, opened: dict[str, tuple[Database, str | None]]) -> None:
    admin = None if database == "sqlite" else Database.open(database, pool_size=1)
    for db, dropped in opened.values():
        await db.close()
        if admin is not None and dropped is not None:
            async with admin.engine.begin() as conn:
                await conn.execute(sa.text(f"DROP DATABASE IF EXISTS {dropped}"))
    if admin is not None:
        await admin.close()


def report(spent: dict[str, list[list[float]]], n: int, rounds: int) -> None:
    """Median µs per row of each phase, and its ratio to "all" (below 1: the variant writes
    faster, i.e. what the left-out index costs)."""
    medians = {
        name: [statistics.median(run[i] for run in runs) * 1e6 / n for i in range(len(PHASES))]
        for name, runs in spent.items()
    }
    print(f"\nmedian µs per row over {rounds} rounds (ratio to all)")
    print(f"{'variant':28}" + "".join(f"{phase:>20}" for phase in PHASES))
    for name, values in medians.items():
        cells = [f"{v:9.1f} ({v / medians['all'][i]:.3f})" for i, v in enumerate(values)]
        print(f"{name:28}" + "".join(f"{cell:>20}" for cell in cells))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=DEFAULT_URL, help="mysql+asyncmy:// URL or sqlite")
    parser.add_argument("--n", type=int, default=4000, help="rows per variant and round")
    parser.add_argument("--group", type=int, default=16, help="rows per transaction")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    kind = "SQLite" if args.database == "sqlite" else make_url(args.database).host
    print(f"tasks table indexes on {kind}: n={args.n} group={args.group} rounds={args.rounds}")
    with tempfile.TemporaryDirectory() as tmp:
        opened = await open_variants(args.database, Path(tmp))
        spent: dict[str, list[list[float]]] = {name: [] for name in opened}
        try:
            for number in range(args.rounds):
                names = list(opened) if number % 2 == 0 else list(opened)[::-1]
                for name in names:
                    rows = task_rows(args.n, "a" * 32)
                    spent[name].append(
                        await write(opened[name][0], tasks_of(name), rows, args.group)
                    )
                print(f"  round {number + 1} done, load {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            await close_variants(args.database, opened)
    report(spent, args.n, args.rounds)


def tasks_of(name: str) -> sa.Table:
    return table_without(variants()[name])


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
