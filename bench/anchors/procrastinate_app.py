"""The Procrastinate app of the anchor drain (bench/anchors/procrastinate_drain.py): one
no-op task on queue ``anchors`` that appends one byte to the mark file. Its connector's
conninfo comes from ``ANCHOR_PG_CONNINFO`` (the drain's throwaway cluster)."""

from __future__ import annotations

import os

import procrastinate

from bench.anchors.common import mark

CONNINFO_ENV = "ANCHOR_PG_CONNINFO"
QUEUE = "anchors"

app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=os.environ.get(CONNINFO_ENV, ""))
)


@app.task(name="anchors.noop", queue=QUEUE)
async def noop(i: int) -> None:
    mark()
