"""Shared command-line pieces: options, error reporting and `--json` output.

The database pieces are imported where they are used: a command that only talks HTTP does not
load SQLAlchemy."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from agentcall.orbit.cli.extras import is_missing_dependency, refuse_missing_extra
from agentcall.orbit.domain.errors import NotMigrated, OrbitError, SetupError
from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.settings import ENV_CONFIG, ENV_DATABASE, database_url

if TYPE_CHECKING:
    from agentcall.orbit.store.db import Database

URL_HELP = (
    "SQLAlchemy URL of the database. SQLite: sqlite+aiosqlite:///var/orbit.db is the relative "
    "path var/orbit.db, resolved from the working directory; an absolute path takes four "
    "slashes: sqlite+aiosqlite:////var/lib/orbit/orbit.db. MySQL/MariaDB: "
    "mysql+asyncmy://USER:PASSWORD@HOST:3306/DATABASE (special characters of the password "
    "URL-encoded, e.g. @ as %40)."
)

T = TypeVar("T")


def _database(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """--database, else the environment, else the config file of ORBIT_CONFIG, else SQLite."""
    if value:
        return value
    try:
        return database_url()
    except SetupError as exc:
        raise click.BadParameter(exc.message, ctx, param) from None


database_option = click.option(
    "--database",
    callback=_database,
    help=f"{URL_HELP} [default: env {ENV_DATABASE}, else database_url in the file of "
    f"{ENV_CONFIG}, else sqlite+aiosqlite:///var/orbit.db]",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"orbit: error: {message}", err=True)
    sys.exit(code)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one async operation; Orbit errors become a one-line message and exit status 1."""
    try:
        return asyncio.run(coroutine)
    except OrbitError as exc:
        fail(exc.message)


def with_database(url: str, action: Callable[[Database], Coroutine[Any, Any, T]]) -> T:
    """Run `action` on the database of `url`; a database that cannot be used (unparsable URL,
    wrong password, unreachable server, missing database) is one line naming the problem and
    exit status 1 (`agentcall.orbit.cli.database`). Installed without the `orbit` extra, the command
    says so in one line (`agentcall.orbit.cli.extras`)."""
    try:
        from agentcall.orbit.cli.database import explain, location
        from agentcall.orbit.store.db import Database
    except ModuleNotFoundError as exc:
        if not is_missing_dependency(exc):
            raise
        context = click.get_current_context(silent=True)
        refuse_missing_extra(context.command_path if context else "orbit", exc)

    async def go() -> T:
        db = Database.open(url)
        try:
            return await action(db)
        finally:
            await db.close()

    try:
        return asyncio.run(go())
    except Exception as exc:  # explained in one line, or raised again with its traceback
        line = explain(url, exc)
        if line is not None:
            fail(line)
        if isinstance(exc, NotMigrated):  # which file or database, when it is not the expected
            fail(f"{location(url)}: {exc.message}")
        if isinstance(exc, OrbitError):
            fail(exc.message)
        raise


def emit(data: dict[str, Any], as_json: bool, text: str) -> None:
    click.echo(json.dumps(data) if as_json else text)


def parse_expiry(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value, "--expires-at")
    except OrbitError as exc:
        raise click.BadParameter(exc.message) from None
