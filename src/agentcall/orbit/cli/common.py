"""Shared command-line pieces: options, error reporting and `--json` output."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any, NoReturn, TypeVar

import click

from agentcall.orbit.domain.errors import OrbitError
from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.settings import DEFAULT_DATABASE, ENV_DATABASE
from agentcall.orbit.store.db import Database

T = TypeVar("T")

database_option = click.option(
    "--database",
    envvar=ENV_DATABASE,
    default=DEFAULT_DATABASE,
    show_default=True,
    help=f"SQLAlchemy URL (sqlite+aiosqlite:///PATH or mysql+asyncmy://...); env {ENV_DATABASE}.",
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
    async def go() -> T:
        db = Database.open(url)
        try:
            return await action(db)
        finally:
            await db.close()

    return run(go())


def emit(data: dict[str, Any], as_json: bool, text: str) -> None:
    click.echo(json.dumps(data) if as_json else text)


def parse_expiry(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value, "--expires-at")
    except OrbitError as exc:
        raise click.BadParameter(exc.message) from None
