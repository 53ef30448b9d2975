"""What an operator sees of the database URL: where it points (a relative SQLite path is said to
be relative, with the file it resolves to), and one line naming the problem instead of a
traceback when the database cannot be used (wrong password, unreachable server, missing
database, unparsable URL, SQLite file that cannot be opened)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url

SHAPES = "sqlite+aiosqlite:///PATH or mysql+asyncmy://USER:PASSWORD@HOST:PORT/DATABASE"
# MySQL/MariaDB client and server error numbers
_ACCESS_DENIED, _DB_ACCESS_DENIED, _UNKNOWN_DB = 1045, 1044, 1049
_UNREACHABLE = frozenset({2002, 2003, 2005, 2013})


def location(url: str, cwd: Path | None = None) -> str:
    """Where `url` points, for messages and the start-up line; never shows a password."""
    try:
        parsed = make_url(url)
    except (sa.exc.ArgumentError, ValueError):
        return "an unparsable database URL"
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_location(parsed.database or "", cwd)
    port = parsed.port or 3306
    return (
        f"database {parsed.database or '(none)'} on {parsed.host}:{port} "
        f"as user {parsed.username or '(none)'}"
    )


def missing_sqlite_file(url: str, cwd: Path | None = None) -> Path | None:
    """The file a SQLite `url` names when it does not exist; None for an existing file, an
    in-memory database, another database or a URL that does not parse (explained later)."""
    try:
        parsed = make_url(url)
    except (sa.exc.ArgumentError, ValueError):
        return None
    path = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or path in ("", ":memory:"):
        return None
    if path.startswith("file:") or parsed.query.get("mode") == "memory":
        return None  # an SQLite URI: its meaning is SQLite's own
    resolved = Path(path) if Path(path).is_absolute() else (cwd or Path.cwd()) / path
    return None if resolved.exists() else resolved


def _sqlite_location(path: str, cwd: Path | None) -> str:
    if not path or path == ":memory:":
        return "an in-memory SQLite database"
    if Path(path).is_absolute():
        return f"SQLite file {path}"
    resolved = (cwd or Path.cwd()) / path
    return (
        f"SQLite file {path} (a relative path, from the working directory: {resolved}; "
        "sqlite+aiosqlite:////ABSOLUTE/PATH for an absolute path)"
    )


def explain(url: str, exc: BaseException) -> str | None:
    """One line saying why the database of `url` cannot be used, or None when `exc` is not
    about reaching or opening the database (then it is a defect and keeps its traceback).
    The URL itself is never repeated: it may hold a password."""
    try:
        make_url(url)
    except (sa.exc.ArgumentError, ValueError) as problem:
        why = "its port is not a number" if isinstance(problem, ValueError) else "not a URL"
        return f"cannot parse the database URL ({why}); expected {SHAPES}"
    for cause in _causes(exc):
        if isinstance(cause, sa.exc.NoSuchModuleError):
            return f"unsupported database URL scheme ({cause}); use {SHAPES}"
        line = _driver_error(url, cause)
        if line is not None:
            return line
    return None


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, the driver error a SQLAlchemy error wraps, and what caused each."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        nested = [getattr(current, "orig", None), current.__cause__, current.__context__]
        pending.extend(e for e in nested if isinstance(e, BaseException))


def _driver_error(url: str, exc: BaseException) -> str | None:
    where = location(url)
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    detail = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    if type(exc).__module__.startswith(("asyncmy", "pymysql")) and code is not None:
        return _mysql_error(where, code, detail)
    if type(exc).__module__ == "sqlite3" and "unable to open" in str(exc):
        return f"cannot open the {where}: {exc}; check that its directory exists and is writable"
    if isinstance(exc, OSError) and exc.filename is not None:  # e.g. its directory
        return f"cannot open the {where}: {exc.strerror} ({exc.filename})"
    if isinstance(exc, socket.gaierror):
        return f"cannot reach the {where}: unknown host ({exc.strerror})"
    if isinstance(exc, OSError) and exc.errno in (
        errno.ECONNREFUSED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ETIMEDOUT,
    ):
        return f"cannot reach the {where}: {exc.strerror}; is the server running there?"
    if isinstance(exc, TimeoutError):
        return f"cannot reach the {where}: no answer in time; is the host right?"
    return None


def _mysql_error(where: str, code: int, detail: str) -> str | None:
    if code == _ACCESS_DENIED:
        return (
            f"the server refused the {where}: wrong user name or password in the database URL "
            f"({detail})"
        )
    if code == _DB_ACCESS_DENIED:
        return f"the user may not use the {where}: grant it ALL PRIVILEGES on it ({detail})"
    if code == _UNKNOWN_DB:
        return (
            f"the {where} does not exist: create it (CREATE DATABASE ... CHARACTER SET utf8mb4 "
            "COLLATE utf8mb4_bin) or fix the database name in the URL"
        )
    if code in _UNREACHABLE:
        return f"cannot reach the {where}: {detail}; is the server running there?"
    return None
