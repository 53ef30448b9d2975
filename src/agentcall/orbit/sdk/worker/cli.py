"""`orbit worker --app module:registry` (also `python -m agentcall.orbit.sdk.worker`): run the
worker SDK over a registry of handlers. Imports only the SDK, so a worker process starts fast."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Callable

import click

from agentcall.orbit import logs
from agentcall.orbit.domain.ids import is_id
from agentcall.orbit.sdk.worker.errors import RegistryError, WorkerStopped
from agentcall.orbit.sdk.worker.registry import load_registry
from agentcall.orbit.sdk.worker.runtime import Worker, WorkerConfig

ENV_QUEUES = "ORBIT_WORKER_QUEUES"
ENV_URL = "ORBIT_URL"
ENV_TOKEN = "ORBIT_TOKEN"
ENV_LOG_FORMAT = "ORBIT_LOG_FORMAT"


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


def settings(url: str | None, token: str | None) -> tuple[str, str]:
    url = url or os.environ.get(ENV_URL)
    token = token or os.environ.get(ENV_TOKEN)
    missing = [name for name, value in ((ENV_URL, url), (ENV_TOKEN, token)) if not value]
    if missing:
        raise RegistryError(f"set {' and '.join(missing)} (or pass --url / --token)")
    assert url is not None and token is not None
    if not url.startswith(("http://", "https://", "ws://", "wss://")):
        raise RegistryError(f"{ENV_URL} must be an http(s):// or ws(s):// URL, got {url!r}")
    return url, token


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--app", "app_spec", required=True, metavar="MODULE:ATTRIBUTE",
              help="The orbit.worker.Registry to serve, e.g. myapp.tasks:registry.")
@click.option("--queue", "queues", multiple=True, metavar="QUEUE_ID",
              help=f"Queue to serve (repeat for several); env {ENV_QUEUES} (space-separated).")
@click.option("--url", help=f"Orbit API base URL; env {ENV_URL}.")
@click.option("--token", help=f"Token with tasks:work on the queues; env {ENV_TOKEN}.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 1000),
              envvar="ORBIT_WORKER_CONCURRENCY", help="Attempts run at the same time.")
@click.option("--name", default=None, help="Worker name in the history [default: orbit@HOST].")
@click.option("--grace-period", default=30.0, show_default=True, type=click.FloatRange(0, 3600),
              envvar="ORBIT_WORKER_GRACE_PERIOD",
              help="Seconds running handlers get to finish after SIGTERM before they are "
              "cancelled and handed back.")
@click.option("--log-format", envvar=ENV_LOG_FORMAT, default="auto", show_default=True,
              type=click.Choice(["auto", "json", "text"]), help="Log line format.")
@click.option("--loop", "loop_name", envvar="ORBIT_WORKER_LOOP", default="auto",
              show_default=True, type=click.Choice(["auto", "uvloop", "asyncio"]),
              help="Event loop: uvloop when installed (auto), or the standard asyncio loop.")
def worker(
    app_spec: str,
    queues: tuple[str, ...],
    url: str | None,
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
    logs.configure(fmt=log_format)
    queue_ids = queues or tuple(os.environ.get(ENV_QUEUES, "").split())
    if not queue_ids or not all(is_id(q) for q in queue_ids):
        fail(f"give one or more --queue QUEUE_ID (32 hex characters) or set {ENV_QUEUES}", 2)
    try:
        base, secret = settings(url, token)
        sys.path.insert(0, os.getcwd())
        registry = load_registry(app_spec)
        factory = loop_factory(loop_name)
    except RegistryError as exc:
        fail(str(exc), 2)
        return
    config = WorkerConfig(
        url=base, token=secret, queues=queue_ids, concurrency=concurrency,
        name=name or f"orbit@{socket.gethostname()}"[:128], grace_period=grace_period,
    )  # fmt: skip
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(Worker(registry, config).run())
    except WorkerStopped as exc:
        fail(str(exc), 3)
    # handler threads that ignored cancellation must not keep the process alive
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
