"""Command line: ``mocksaas serve`` and ``mocksaas admin …``."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

import click

from agentcall import logs
from agentcall.mocksaas.cli_admin import admin
from agentcall.mocksaas.domain.discovery import MAX_PAGE_SIZE
from agentcall.mocksaas.errors import MockSaasError
from agentcall.mocksaas.settings import DEFAULT_AMQP_URL, Settings

EXTRA = "mocksaas"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentcall", prog_name="mocksaas")
def main() -> None:
    """Mock SaaS: the SaaS side of the SaaS <-> Dispatcher contract as a real process.

    `serve` runs the process (four contract GETs, v0.3 discovery, MQ topology owner,
    result consumer, admin API); `admin` scripts scenarios against a running one.
    See docs/mocksaas.md.
    """


@main.command()
@click.option(
    "--http-host",
    envvar="MOCKSAAS_HTTP_HOST",
    default="127.0.0.1",
    show_default=True,
    help="Listen address of the HTTP API.",
)
@click.option(
    "--http-port",
    envvar="MOCKSAAS_HTTP_PORT",
    default=8088,
    type=int,
    show_default=True,
    help="Listen port (0 picks a free one; see the log).",
)
@click.option(
    "--amqp-url",
    envvar=["MOCKSAAS_AMQP_URL", "AGENTCALL_AMQP_URL"],
    default=DEFAULT_AMQP_URL,
    show_default=True,
    help="RabbitMQ URL.",
)
@click.option(
    "--db",
    "db_path",
    envvar="MOCKSAAS_DB",
    default="var/mocksaas.db",
    type=click.Path(dir_okay=False, path_type=Path),
    show_default=True,
    help="SQLite state file (created; survives restarts).",
)
@click.option(
    "--discovery-page-size",
    envvar="MOCKSAAS_DISCOVERY_PAGE_SIZE",
    default=MAX_PAGE_SIZE,
    type=click.IntRange(1, MAX_PAGE_SIZE),
    show_default=True,
    help="Default discovery page size (per-dispatcher override in the admin API).",
)
@click.option(
    "--contracts-dir",
    envvar="MOCKSAAS_CONTRACTS_DIR",
    default=None,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="contracts/dispatcher directory (default: found from the repository).",
)
@click.option(
    "--log-format",
    envvar="MOCKSAAS_LOG_FORMAT",
    default="auto",
    type=click.Choice(["auto", "json", "text"]),
    show_default=True,
    help="JSON lines, text, or text only on a terminal.",
)
def serve(
    http_host: str,
    http_port: int,
    amqp_url: str,
    db_path: Path,
    discovery_page_size: int,
    contracts_dir: Path | None,
    log_format: str,
) -> None:
    """Run the Mock SaaS until SIGTERM/SIGINT.

    Serves GET /internal/v1/dispatcher/{sip,task/:id,tenant/:id/quota,tasks?after=},
    the admin API under /admin/v1, /healthz and /metrics; declares the MQ topology of
    every known dispatcher; consumes their result queues.
    """
    logs.configure(log_format, quiet=("aiormq", "aio_pika", "uvicorn.access"))
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # see serve_async
    _require_extra()
    try:
        settings = Settings(
            http_host, http_port, amqp_url, db_path, discovery_page_size, contracts_dir
        )
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            code = runner.run(serve_async(settings))
    except MockSaasError as exc:
        click.echo(f"mocksaas: {exc.message} ({exc.hint})", err=True)
        sys.exit(2)
    sys.exit(code)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when it is installed (less CPU per result consumed and request served)."""
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


async def serve_async(settings: Settings) -> int:
    # jsonschema[format-nongpl] imports rfc3987_syntax, which compiles a grammar for ~3 s at
    # import time; the contract schemas only use date/date-time formats, so a server process
    # skips it (jsonschema then simply has no "iri" checker).
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    from agentcall.mocksaas.server import serve as run

    return await run(settings)


def missing_extra_line(command: str, missing: ModuleNotFoundError) -> str:
    """The line every command of the distribution prints without its extra."""
    return (
        f"{command}: the '{EXTRA}' extra is not installed ({missing}): "
        f"pip install 'agentcall[{EXTRA}]'"
    )


def _require_extra() -> None:
    """The server's modules import, or one line says which extra to install."""
    try:
        importlib.import_module("agentcall.mocksaas.server")
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.startswith("agentcall"):
            raise
        click.echo(missing_extra_line("mocksaas serve", exc), err=True)
        sys.exit(2)


main.add_command(admin)
