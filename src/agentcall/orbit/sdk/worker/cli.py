"""`orbit worker --app module:registry` (also `python -m agentcall.orbit.sdk.worker`): run the
worker SDK over a registry of handlers. Imports only the SDK, so a worker process starts fast."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable

import click

from agentcall import logs
from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.sdk.settings import (
    ENV_APP,
    ENV_CONCURRENCY,
    ENV_GRACE_PERIOD,
    ENV_LOG_FORMAT,
    ENV_LOOP,
    ENV_QUEUES,
    ENV_TOKEN,
    ENV_URL,
    WorkerSettings,
    worker_settings,
)
from agentcall.orbit.sdk.worker.errors import RegistryError, WorkerStopped
from agentcall.orbit.sdk.worker.registry import load_registry
from agentcall.orbit.sdk.worker.runtime import Worker, WorkerConfig


def fail(message: str, code: int) -> None:
    click.echo(f"orbit worker: error: {message}", err=True)
    sys.exit(code)


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop (less CPU per message) unless `asyncio` is asked for or it is not installed."""
    if name == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if name == "uvloop":
            raise RegistryError("--loop uvloop: uvloop is not installed") from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--app",
    "app_spec",
    required=True,
    metavar="MODULE:ATTRIBUTE",
    envvar=ENV_APP,
    help="The Registry of handlers to serve, e.g. myapp.tasks:registry (the module is "
    f"imported from the working directory or the Python path); env {ENV_APP}.",
)
@click.option(
    "--queue",
    "queues",
    multiple=True,
    metavar="QUEUE_ID",
    help=f"Queue to serve (repeat for several); env {ENV_QUEUES} (space-separated).",
)
@click.option(
    "--url",
    "urls",
    multiple=True,
    help="Orbit API base URL; repeat for several servers of one database (the worker "
    f"moves to the next when its server goes away); env {ENV_URL} (comma-separated).",
)
@click.option("--token", help=f"Token with tasks:work on the queues; env {ENV_TOKEN}.")
@click.option(
    "--concurrency",
    default=4,
    show_default=True,
    type=click.IntRange(1, 1000),
    envvar=ENV_CONCURRENCY,
    help="Attempts run at the same time.",
)
@click.option("--name", default=None, help="Worker name in the history [default: orbit@HOST].")
@click.option(
    "--grace-period",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0, 3600),
    envvar=ENV_GRACE_PERIOD,
    help="Seconds running handlers get to finish after SIGTERM before they are "
    "cancelled and handed back.",
)
@click.option(
    "--log-format",
    envvar=ENV_LOG_FORMAT,
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "json", "text"]),
    help="Log line format.",
)
@click.option(
    "--loop",
    "loop_name",
    envvar=ENV_LOOP,
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "uvloop", "asyncio"]),
    help="Event loop: uvloop when installed (auto), or the standard asyncio loop.",
)
def worker(
    app_spec: str,
    queues: tuple[str, ...],
    urls: tuple[str, ...],
    token: str | None,
    concurrency: int,
    name: str | None,
    grace_period: float,
    log_format: str,
    loop_name: str = "auto",
) -> None:
    """Serve tasks with the handlers of --app (docs/orbit/worker-protocol.md).

    SIGTERM/SIGINT drain gracefully: no new leases, running handlers finish within the grace
    period, the rest is handed back. A second signal exits at once."""
    logs.configure(fmt=log_format, logger="orbit")
    try:
        settings = worker_settings(
            url=urls or None,
            token=token,
            queues=queues,
            concurrency=concurrency,
            name=name,
            grace_period=grace_period,
            log_format=log_format,
            loop=loop_name,
        )
        sys.path.insert(0, os.getcwd())
        registry = load_registry(app_spec)
        factory = loop_factory(settings.loop)
    except (SetupError, RegistryError) as exc:
        fail(str(exc), 2)
        return
    config = _config(settings)
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(Worker(registry, config).run())
    except WorkerStopped as exc:
        fail(str(exc), 3)
    # handler threads that ignored cancellation must not keep the process alive
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _config(settings: WorkerSettings) -> WorkerConfig:
    return WorkerConfig(
        url=settings.url,
        token=settings.token,
        queues=settings.queues,
        concurrency=settings.concurrency,
        name=settings.name,
        grace_period=settings.grace_period,
        tracing=settings.tracing,
    )
