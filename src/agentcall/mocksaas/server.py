"""``mocksaas serve``: run the app under uvicorn until SIGTERM/SIGINT or a loop dies."""

from __future__ import annotations

import asyncio
import logging
import signal
from types import FrameType

import uvicorn

from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.settings import Settings
from agentcall.mocksaas.web.app import build_app

log = logging.getLogger("mocksaas")


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    """uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown; exit 0 then."""
    raise SystemExit(0)


async def serve(settings: Settings) -> int:
    signal.signal(signal.SIGTERM, _exit_cleanly)
    rt = Runtime(settings)
    try:
        await rt.start()  # broker, topology, consumers: fail here with a clear message
    except BaseException:
        await rt.stop()
        raise
    config = uvicorn.Config(
        build_app(rt),
        host=settings.http_host,
        port=settings.http_port,
        log_config=None,
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(), name="http")
    while not server.started and not serving.done():
        await asyncio.sleep(0.02)
    if serving.done():
        await serving
        return 1
    port = server.servers[0].sockets[0].getsockname()[1]
    log.info(
        "listening",
        extra={"fields": {"host": settings.http_host, "port": port, "db": str(settings.db_path)}},
    )
    watched = [serving, *rt.loops]
    done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
    # loops cancelled by a graceful shutdown (lifespan) are not failures
    failed = [t for t in done if t is not serving and not t.cancelled()]
    for task in failed:
        log.error(
            "background loop stopped; shutting down",
            extra={"fields": {"loop": task.get_name(), "error": repr(task.exception())}},
        )
    if not serving.done():
        server.should_exit = True
        await serving
    return 1 if failed else 0
