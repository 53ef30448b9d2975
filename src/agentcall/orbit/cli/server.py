"""`orbit serve` and `orbit migrate`."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import click
import uvicorn

from agentcall import logs
from agentcall.orbit.api.app import create_app
from agentcall.orbit.api.transport import CoalescingHttpToolsProtocol
from agentcall.orbit.cli.common import database_option, emit, fail, json_option, with_database
from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.settings import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ENV_HOST,
    ENV_LOG_FORMAT,
    ENV_PORT,
    ServerSettings,
    export,
    from_environ,
)
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.migrate import require_current, upgrade


@click.command()
@database_option
@click.option("--host", envvar=ENV_HOST, default=DEFAULT_HOST, show_default=True,
              help=f"Interface to listen on; env {ENV_HOST}.")
@click.option("--port", envvar=ENV_PORT, default=DEFAULT_PORT, show_default=True,
              type=click.IntRange(1, 65535), help=f"TCP port; env {ENV_PORT}.")
@click.option("--log-format", envvar=ENV_LOG_FORMAT, default="auto", show_default=True,
              type=click.Choice(["auto", "json", "text"]),
              help="JSON lines, readable text, or text only on a terminal.")
@click.option("--access-log/--no-access-log", default=True, show_default=True,
              help="One structured line per request.")
@click.option("--pool-size", default=20, show_default=True, type=click.IntRange(1, 500),
              help="Database connections kept open per process (MySQL/MariaDB).")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Server processes (MySQL/MariaDB only; SQLite has one writer).")
def serve(
    database: str, host: str, port: int, log_format: str, access_log: bool, pool_size: int,
    workers: int,
) -> None:  # fmt: skip
    """Run the Task API over HTTP. Refuses to start on an unmigrated database."""
    logs.configure(fmt=log_format, logger="orbit")
    settings = _settings(database, host, port, log_format, access_log, pool_size)
    dialect = with_database(database, _checked)
    if workers > 1 and dialect is Dialect.SQLITE:
        raise click.BadParameter("SQLite runs with one server process", param_hint="--workers")
    logging.getLogger("orbit.api").info(
        "starting", extra={"url": f"http://{host}:{port}", "workers": workers,
                           "dialect": dialect.value},
    )  # fmt: skip
    options: dict[str, Any] = dict(
        host=host, port=port, log_config=None, access_log=False, server_header=False,
        lifespan="on", timeout_graceful_shutdown=10,
        http=CoalescingHttpToolsProtocol,  # one write per response (orbit.api.transport)
        ws_max_size=1_048_576,  # a worker frame is at most 1 MiB (worker-protocol.md §2)
    )  # fmt: skip
    if workers == 1:
        app = create_app(Database.open(database, pool_size=pool_size), settings)
        uvicorn.run(app, **options)
        return
    export(settings)  # each process builds its app from these (orbit.api.factory)
    factory = "agentcall.orbit.api.factory:from_environment"
    uvicorn.run(factory, factory=True, workers=workers, **options)


def _settings(
    database: str, host: str, port: int, log_format: str, access_log: bool, pool_size: int
) -> ServerSettings:
    """The environment's settings with the command line's values over them."""
    try:
        base = from_environ()
    except SetupError as exc:
        fail(exc.message)
    return replace(base, database_url=database, host=host, port=port, log_format=log_format,
                   access_log=access_log, pool_size=pool_size)  # fmt: skip


async def _checked(db: Database) -> Dialect:
    await require_current(db)
    return db.dialect


@click.command()
@database_option
@json_option
def migrate(database: str, as_json: bool) -> None:
    """Create or upgrade the database schema to this program's revision."""
    before, after = with_database(database, upgrade)
    emit(
        {"from": before, "to": after},
        as_json,
        f"database at revision {after}" + ("" if before == after else f" (was {before})"),
    )
