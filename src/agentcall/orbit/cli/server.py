"""`orbit serve` and `orbit migrate`."""

from __future__ import annotations

import errno
import logging
import socket
import ssl
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import uvicorn

from agentcall import logs
from agentcall.orbit.api.transport import CoalescingHttpToolsProtocol
from agentcall.orbit.assembly.server import create_app, open_database
from agentcall.orbit.cli.common import (
    URL_HELP,
    database_option,
    emit,
    fail,
    json_option,
    with_database,
)
from agentcall.orbit.cli.database import location, missing_sqlite_file
from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.settings import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ENV_ACCESS_LOG,
    ENV_CONFIG,
    ENV_DATABASE,
    ENV_HOST,
    ENV_LOG_FORMAT,
    ENV_POOL,
    ENV_PORT,
    ENV_SSL_CERTFILE,
    ENV_SSL_KEYFILE,
    ENV_WORKERS,
    MAX_WORKERS,
    ServerSettings,
    export,
    load,
)
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import require_current, upgrade

FILE = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.option(
    "--config",
    "config_file",
    type=FILE,
    default=None,
    help=f"TOML file with any of the settings below (lower-case names without ORBIT_, "
    f"e.g. port = 7470); the environment overrides it; env {ENV_CONFIG}.",
)
@click.option("--database", default=None, help=f"{URL_HELP} Env {ENV_DATABASE}.")
@click.option(
    "--host",
    default=None,
    help=f"Interface to listen on [default: {DEFAULT_HOST}]; env {ENV_HOST}.",
)
@click.option(
    "--port",
    default=None,
    type=click.IntRange(1, 65535),
    help=f"TCP port [default: {DEFAULT_PORT}]; env {ENV_PORT}.",
)
@click.option(
    "--log-format",
    default=None,
    type=click.Choice(["auto", "json", "text"]),
    help="JSON lines, readable text, or text only on a terminal [default: auto]; "
    f"env {ENV_LOG_FORMAT}.",
)
@click.option(
    "--access-log/--no-access-log",
    default=None,
    help=f"One structured line per request [default: on]; env {ENV_ACCESS_LOG} (1/0).",
)
@click.option(
    "--pool-size",
    default=None,
    type=click.IntRange(1, 500),
    help="Database connections kept open per process (MySQL/MariaDB) [default: 20]; "
    f"env {ENV_POOL}.",
)
@click.option(
    "--workers",
    default=None,
    type=click.IntRange(1, MAX_WORKERS),
    help="Server processes (MySQL/MariaDB only; SQLite has one writer) [default: 1]; "
    f"env {ENV_WORKERS}.",
)
@click.option(
    "--ssl-certfile",
    default=None,
    type=FILE,
    help="Serve HTTPS (and wss:// for workers) with this certificate chain (PEM; it may "
    f"hold the key too); env {ENV_SSL_CERTFILE}.",
)
@click.option(
    "--ssl-keyfile",
    default=None,
    type=FILE,
    help=f"The private key of --ssl-certfile (PEM, unencrypted); env {ENV_SSL_KEYFILE}.",
)
def serve(config_file: Path | None, **options: Any) -> None:
    """Run the Task API over HTTP(S). Refuses to start on an unmigrated database.

    Settings come from the options, then ORBIT_* variables, then the --config file, then the
    defaults. The server logs "orbit api ready" only once its socket listens."""
    settings = _settings(config_file, options)
    logs.configure(fmt=settings.log_format, logger="orbit")
    _require_existing_file(settings.database_url)
    dialect, shared = with_database(settings.database_url, _checked)
    if settings.workers > 1 and not shared:
        fail("--workers / ORBIT_WORKERS: SQLite runs with one server process")
    _check_tls(settings)
    sock = _listen(settings.host, settings.port)
    scheme = "https" if settings.ssl_certfile else "http"
    logging.getLogger("orbit.api").info(
        "listening",
        extra={
            "url": f"{scheme}://{_netloc(settings.host, settings.port)}",
            "workers": settings.workers,
            "dialect": dialect,
            "database": location(settings.database_url),
        },
    )
    uvicorn_options: dict[str, Any] = dict(
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        server_header=False,
        # the app believes forwarded headers only from ORBIT_TRUSTED_PROXIES (console.edge)
        proxy_headers=False,
        lifespan="on",
        timeout_graceful_shutdown=10,
        ssl_certfile=settings.ssl_certfile,
        ssl_keyfile=settings.ssl_keyfile,
        http=CoalescingHttpToolsProtocol,  # one write per response (agentcall.orbit.api.transport)
        ws_max_size=1_048_576,  # a worker frame is at most 1 MiB (worker-protocol.md §2)
    )
    if settings.workers == 1:
        app = create_app(open_database(settings), settings)
        server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options))
        server.run(sockets=[sock])  # the app starts (and says ready) on the bound socket
        if not server.started:
            sys.exit(1)
        return
    sock.close()  # uvicorn binds it again, once, and shares it with its processes
    export(settings)  # each process builds its app from these (agentcall.orbit.assembly.server)
    factory = "agentcall.orbit.assembly.server:from_environment"
    uvicorn.run(factory, factory=True, workers=settings.workers, **uvicorn_options)


def _settings(config_file: Path | None, options: dict[str, Any]) -> ServerSettings:
    """The command line's values over the environment's, over the config file's."""
    try:
        base = load(config_file)
    except SetupError as exc:
        fail(exc.message)
    given = {name: value for name, value in options.items() if value is not None}
    if "database" in given:
        given["database_url"] = given.pop("database")
    for name in ("ssl_certfile", "ssl_keyfile"):
        if name in given:
            given[name] = str(given[name])
    return replace(base, **given)


def _require_existing_file(url: str) -> None:
    """`orbit serve` never creates a SQLite file (`orbit migrate` does): a mistyped path or a
    moved volume would otherwise start on an empty database."""
    if missing_sqlite_file(url) is not None:
        fail(
            f"{location(url)} does not exist; `orbit serve` never creates a database: "
            "create it with `orbit migrate --database URL`, or fix the path"
        )


def _check_tls(settings: ServerSettings) -> None:
    """A certificate or key that cannot be used stops the start with one line."""
    if settings.ssl_keyfile and not settings.ssl_certfile:
        fail("--ssl-keyfile / ORBIT_SSL_KEYFILE needs --ssl-certfile / ORBIT_SSL_CERTFILE")
    if not settings.ssl_certfile:
        return
    try:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(settings.ssl_certfile, settings.ssl_keyfile)
    except (OSError, ssl.SSLError) as exc:
        files = " and ".join(f for f in (settings.ssl_certfile, settings.ssl_keyfile) if f)
        fail(f"cannot use the TLS certificate {files}: {exc.strerror or exc}")


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything starts: a taken port is one line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {_netloc(host, port)}: {_bind_problem(exc, port)}")
    sock.set_inheritable(True)
    return sock


def _bind_problem(exc: OSError, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} is in use by another program; choose another with --port or "
            f"{ENV_PORT} (see who listens: ss -ltnp 'sport = :{port}')"
        )
    if exc.errno == errno.EACCES:
        return f"port {port} needs privileges; use a port above 1023 behind a proxy"
    if exc.errno == errno.EADDRNOTAVAIL:
        return "this host has no such address; use --host 0.0.0.0 or one of its addresses"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    return exc.strerror or str(exc)


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _checked(db: Database) -> tuple[str, bool]:
    """The database's dialect (for the log) and whether several server processes may share it."""
    await require_current(db)
    return db.dialect.value, db.shared


@click.command()
@database_option
@json_option
def migrate(database: str, as_json: bool) -> None:
    """Create or upgrade the database schema to this program's revision."""
    before, after = with_database(database, upgrade)
    emit(
        {"from": before, "to": after},
        as_json,
        f"{location(database)}: at revision {after}"
        + ("" if before == after else f" (was {before})"),
    )
