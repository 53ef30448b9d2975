"""The floor of idle dispatch on this machine and database, measured in the same run as Orbit's
idle phase (`bench/orbit_workers.py` prints both and their ratio), with no framework at all:

    submitter  INSERT one row (created_at = UTC_TIMESTAMP(6)) and COMMIT (durable), then send
               its id to the worker over a loopback TCP socket: Procrastinate's LISTEN/NOTIFY
               reduced to a socket
    worker     a separate process blocked on that socket: SELECT … FOR UPDATE SKIP LOCKED,
               UPDATE started_at = UTC_TIMESTAMP(6), COMMIT, answer

Latency = started_at − created_at on the database clock, as Orbit's dispatch latency. The floor
has one durable commit, one process hop and one locking read; Orbit's path has the same durable
commit plus the lease's way to the worker and back (`started` is acknowledged, fenced state).
On this shared 2-core VM the time of a hop doubles from one hour to the next; the ratio
Orbit / floor is what does not.

    .venv/bin/python bench/idle_floor.py [--database mysql+asyncmy://...] [--n 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path

import asyncmy
import sqlalchemy as sa

TABLE = "bench_idle_floor"
DEFAULT_URL = os.environ.get(
    "ORBIT_TEST_MYSQL_URL", "mysql+asyncmy://orbit:orbit@127.0.0.1:3306/orbit"
)


async def _connect(url: sa.URL) -> asyncmy.Connection:
    connection = await asyncmy.connect(
        host=url.host,
        port=url.port or 3306,
        user=url.username,
        password=url.password,
        database=url.database,
        autocommit=False,
    )
    async with connection.cursor() as cursor:
        await cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    return connection


async def idle_floor(url: sa.URL, n: int, pause_s: float = 0.02) -> list[float]:
    """`n` rows one at a time through the bare pipeline; their latencies in ms."""
    connection = await _connect(url)
    async with connection.cursor() as cursor:
        await cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (id BIGINT PRIMARY KEY, "
            "created_at DATETIME(6) NOT NULL, started_at DATETIME(6) NULL) "
            "ENGINE=InnoDB"
        )
        await cursor.execute(f"TRUNCATE TABLE {TABLE}")
    worker = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--worker",
            "--database",
            url.render_as_string(hide_password=False),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert worker.stdout is not None
        port = int(worker.stdout.readline())
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        async with connection.cursor() as cursor:
            for number in range(n):
                await asyncio.sleep(pause_s)  # idle between tasks, as in Orbit's idle phase
                await cursor.execute(
                    f"INSERT INTO {TABLE} (id, created_at) VALUES (%s, UTC_TIMESTAMP(6))", (number,)
                )
                await connection.commit()
                writer.write(f"{number}\n".encode())
                await reader.readline()  # the worker committed its start
            await cursor.execute(
                f"SELECT TIMESTAMPDIFF(MICROSECOND, created_at, started_at) FROM {TABLE}"
            )
            latencies = [row[0] / 1000 for row in await cursor.fetchall()]
            await cursor.execute(f"DROP TABLE {TABLE}")
        writer.close()
        return latencies
    finally:
        worker.terminate()
        worker.wait(10)
        await connection.ensure_closed()


async def _worker(url: sa.URL) -> None:
    connection = await _connect(url)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with connection.cursor() as cursor:
            while line := await reader.readline():
                row_id = int(line)
                await cursor.execute(
                    f"SELECT id FROM {TABLE} WHERE id = %s FOR UPDATE SKIP LOCKED", (row_id,)
                )
                if await cursor.fetchone() is not None:
                    await cursor.execute(
                        f"UPDATE {TABLE} SET started_at = UTC_TIMESTAMP(6) WHERE id = %s", (row_id,)
                    )
                await connection.commit()
                writer.write(b"ok\n")

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def quantile(values: list[float], q: float) -> float:
    """The value at rank ⌊q·n⌋ of the sorted values (the benchmarks' p50 and p99)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database",
        default=DEFAULT_URL,
        help="mysql+asyncmy:// URL of a database (a scratch table is made in it)",
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = sa.make_url(args.database)
    if args.worker:
        asyncio.run(_worker(url))
        return
    latencies = asyncio.run(idle_floor(url, args.n))
    print(
        f"floor     {len(latencies)} rows: p50 {quantile(latencies, 0.5):.2f} ms, "
        f"p99 {quantile(latencies, 0.99):.2f} ms ({Path(__file__).name})"
    )


if __name__ == "__main__":
    main()
