"""Celery's drain of no-op tasks: the peer anchor of Orbit's drain (bench/anchors/run.py).

    var/bench/anchors-venv/bin/python bench/anchors/celery_drain.py [--n 10000] [--json]

Celery 5.7 on the RabbitMQ of the local services (``AGENTCALL_AMQP_URL``), configured as a
durable queue is: ``task_acks_late`` (a message is acknowledged after its task ran),
persistent messages, no result backend (``task_ignore_result``). ``--n`` tasks are
published to a fresh queue first, then one ``celery worker -P prefork -c 2`` (the default
prefetch multiplier, no gossip, mingle or heartbeat events) drains it; each task appends
one byte to the mark file (bench/anchors/common.py). Figures: tasks/s from the first mark
to the last, CPU per task of the worker (main and pool processes) and of RabbitMQ
(``beam.smp``, shared with other users of the broker). The queue is deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from celery import Celery  # noqa: E402

from bench.anchors.common import MARK_ENV, Drain, load, mark, oldest, watch  # noqa: E402

BROKER = os.environ.get("AGENTCALL_AMQP_URL", "amqp://agentcall:agentcall@127.0.0.1:5672/")
QUEUE = os.environ.get("ANCHOR_CELERY_QUEUE", "anchors")

app = Celery("anchors", broker=BROKER)
app.conf.update(
    task_acks_late=True,
    task_ignore_result=True,
    task_default_queue=QUEUE,
    task_serializer="json",
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)


@app.task(name="anchors.noop")
def noop(i: int) -> None:
    mark()


def drain(n: int) -> Drain:
    queue = f"anchors-celery-{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory() as tmp:
        marks = Path(tmp) / "marks"
        env = {**os.environ, MARK_ENV: str(marks), "ANCHOR_CELERY_QUEUE": queue}
        os.environ["ANCHOR_CELERY_QUEUE"] = queue
        with app.connection_for_write() as conn:
            for i in range(n):
                noop.apply_async((i,), queue=queue, connection=conn)
        began = load()
        worker = subprocess.Popen(
            [
                *(sys.executable, "-m", "celery", "-A", "bench.anchors.celery_drain", "worker"),
                *("-P", "prefork", "-c", "2", "-Q", queue, "-l", "WARNING"),
                *("--without-gossip", "--without-mingle", "--without-heartbeat"),
            ],
            cwd=REPO,
            env={**env, "PYTHONPATH": str(REPO)},
            stdout=(Path(tmp) / "worker.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        try:
            pids = {"worker": worker.pid}
            if (broker := oldest("beam.smp")) is not None:
                pids["RabbitMQ"] = broker
            seconds, cpu = watch(marks, n, pids)
        finally:
            worker.terminate()
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
            with app.connection_for_write() as conn:
                conn.default_channel.queue_delete(queue)
    return Drain("celery", n, seconds, cpu, began)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    started = time.monotonic()
    found = drain(args.n)
    print(found.to_json() if args.json else found.line())
    print(f"  celery drain done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
