"""The D's HTTP port: uvicorn serving the app with the bounded protocol of
:mod:`agentcall.dispatcher.web.edge`, without its own signal handling (the D owns SIGTERM
and SIGINT)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from agentcall.dispatcher.web.edge import (
    Edge,
    EdgeLimits,
    Report,
    connection_limit,
    open_file_limit,
    protocol_for,
)


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _ignore(level: int, event: str, facts: Any) -> None:
    """The default ``report``."""


def edge_for(limits: EdgeLimits, report: Report = _ignore, open_files: int | None = None) -> Edge:
    """The shared state of one server's connections; the connection limit is lowered (and
    that reported once) when the open-file limit would not leave the D room."""
    files = open_file_limit() if open_files is None else open_files
    kept = connection_limit(limits.max_connections, files)
    if kept < limits.max_connections:
        report(
            logging.WARNING,
            "http.connection_limit_lowered",
            {"configured": limits.max_connections, "kept": kept, "open_file_limit": files},
        )
    return Edge(limits, kept, report)


async def serve(
    app: Any,
    host: str,
    port: int,
    edge: Edge,
    on_listening: Callable[[int], None],
) -> None:
    """Serve ``app`` until cancelled; ``on_listening(port)`` once bound (a bind error is
    raised)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_for(edge),
        ws="none",
        timeout_keep_alive=edge.limits.idle_timeout_s,
        log_config=None,
        access_log=False,
        lifespan="off",
    )
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve(), name="http.serve")
    while not server.started and not task.done():
        await asyncio.sleep(0.05)
    if task.done():
        await task  # raises the bind error
    on_listening(server.servers[0].sockets[0].getsockname()[1])
    try:
        await task
    finally:
        server.should_exit = True
