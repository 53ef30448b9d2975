"""A database that cannot be used is one line naming the problem (`agentcall.orbit.cli.database`),
and a relative SQLite path is reported as relative, with the file it resolves to."""

from __future__ import annotations

import errno
import socket
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.cli.database import explain, location

pytestmark = pytest.mark.unit

MYSQL = "mysql+asyncmy://orbit:secret-pw@db.internal:3306/orbit"


class FakeDriverError(Exception):
    """Stands in for asyncmy's OperationalError: same module prefix, same (code, text) args."""


FakeDriverError.__module__ = "asyncmy.errors"


def wrapped(driver: BaseException) -> sa.exc.DBAPIError:
    """What SQLAlchemy raises around a driver error."""
    return sa.exc.OperationalError("connect", {}, driver)


@pytest.mark.parametrize(
    ("url", "cwd", "expected"),
    [
        (
            "sqlite+aiosqlite:///var/orbit.db",
            Path("/srv/x"),
            "SQLite file var/orbit.db (a relative path, from the working directory: "
            "/srv/x/var/orbit.db; sqlite+aiosqlite:////ABSOLUTE/PATH for an absolute path)",
        ),
        ("sqlite+aiosqlite:////var/lib/orbit/o.db", None, "SQLite file /var/lib/orbit/o.db"),
        ("sqlite+aiosqlite://", None, "an in-memory SQLite database"),
        (MYSQL, None, "database orbit on db.internal:3306 as user orbit"),
        ("mysql+asyncmy://u@h/db", None, "database db on h:3306 as user u"),
        ("not a url", None, "an unparsable database URL"),
    ],
)
def test_location(url: str, cwd: Path | None, expected: str) -> None:
    assert location(url, cwd) == expected
    assert "secret-pw" not in location(url, cwd)


@pytest.mark.parametrize(
    ("url", "error", "expected"),
    [
        (
            MYSQL,
            wrapped(FakeDriverError(1045, "Access denied for user 'orbit'@'10.0.0.5'")),
            "the server refused the database orbit on db.internal:3306 as user orbit: wrong user "
            "name or password in the database URL",
        ),
        (
            MYSQL,
            wrapped(FakeDriverError(1049, "Unknown database 'orbit'")),
            "the database orbit on db.internal:3306 as user orbit does not exist: create it",
        ),
        (
            MYSQL,
            wrapped(FakeDriverError(1044, "Access denied for user 'orbit' to database")),
            "the user may not use the database orbit",
        ),
        (
            MYSQL,
            wrapped(FakeDriverError(2003, "Can't connect to MySQL server on 'db.internal'")),
            "cannot reach the database orbit on db.internal:3306 as user orbit: Can't connect",
        ),
        (
            MYSQL,
            ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
            "cannot reach the database orbit on db.internal:3306 as user orbit: Connection refused",
        ),
        (
            MYSQL,
            socket.gaierror(-2, "Name or service not known"),
            "cannot reach the database orbit on db.internal:3306 as user orbit: unknown host",
        ),
        (MYSQL, TimeoutError(), "no answer in time"),
        (
            "sqlite+aiosqlite:////nope/dir/x.db",
            wrapped(sqlite3.OperationalError("unable to open database file")),
            "cannot open the SQLite file /nope/dir/x.db: unable to open database file; check that",
        ),
        (
            "sqlite+aiosqlite:////proc/x/o.db",
            FileNotFoundError(2, "No such file", "/proc/x"),
            "cannot open the SQLite file /proc/x/o.db: No such file (/proc/x)",
        ),
        (
            "::",
            sa.exc.ArgumentError("Could not parse SQLAlchemy URL from string '::'"),
            "cannot parse the database URL (not a URL); expected sqlite+aiosqlite:///PATH or "
            "mysql+asyncmy://",
        ),
        (
            "mysql+asyncmy://u:secret-pw@h:port/db",
            ValueError("invalid literal for int()"),
            "cannot parse the database URL (its port is not a number)",
        ),
        (
            "pg://x",
            sa.exc.NoSuchModuleError("Can't load plugin: sqlalchemy.dialects:pg"),
            "unsupported database URL scheme",
        ),
    ],
)
def test_explain(url: str, error: BaseException, expected: str) -> None:
    line = explain(url, error)
    assert line is not None and expected in line, line
    assert "\n" not in line and "secret-pw" not in line


def test_a_cause_further_down_is_found() -> None:
    try:
        try:
            raise wrapped(FakeDriverError(1045, "Access denied"))
        except sa.exc.DBAPIError as exc:
            raise RuntimeError("the database is unavailable") from exc
    except RuntimeError as outer:
        line = explain(MYSQL, outer)
    assert line is not None and "wrong user name or password" in line


@pytest.mark.parametrize(
    "error",
    [ValueError("a bug"), wrapped(FakeDriverError(1062, "Duplicate entry")), KeyError("x")],
)
def test_other_errors_are_not_explained_away(error: BaseException) -> None:
    assert explain(MYSQL, error) is None


def test_help_explains_relative_and_absolute_sqlite_paths() -> None:
    for command in (["migrate"], ["serve"], ["init"]):
        text = " ".join(CliRunner().invoke(main, [*command, "--help"]).output.split())
        assert "is the relative path var/orbit.db, resolved from the working directory" in text
        assert "an absolute path takes four slashes: sqlite+aiosqlite:////var/lib/orbit" in text


def test_migrate_reports_a_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["migrate", "--database", "sqlite+aiosqlite:///data/o.db"])
    assert result.exit_code == 0, result.output
    assert (
        f"SQLite file data/o.db (a relative path, from the working directory: "
        f"{tmp_path}/data/o.db" in result.output
    )


def test_an_unparsable_url_is_one_line() -> None:
    result = CliRunner().invoke(main, ["migrate", "--database", "mysql+asyncmy://u:p@h:port/db"])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "cannot parse the database URL" in result.output
    assert "Traceback" not in result.output
