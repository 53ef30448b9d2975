"""Every error tells the truth: 503 UNAVAILABLE only when the database (or the way to it)
failed; any other unexpected exception is 500 INTERNAL (a TypeError inside the
server was answered 503 "retry with the same key"). And which driver errors mean the
connection is gone (such a connection, and every one opened before it, is never
used again)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from asyncmy import errors as asyncmy_errors

from agentcall.orbit.api.errors import INTERNAL, wire_error
from agentcall.orbit.domain import errors as e
from agentcall.orbit.store.db import is_database_failure, is_lost_connection
from agentcall.orbit.store.mysql import translated
from agentcall.orbit.store.sql import ConcurrentChange

pytestmark = pytest.mark.unit


def _dbapi(orig: Exception) -> sa.exc.StatementError:
    return sa.exc.DBAPIError.instance("SELECT 1", (), orig, asyncmy_errors.Error)


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (TypeError("unhashable type: 'dict'"), 500, "INTERNAL"),
        (KeyError("x"), 500, "INTERNAL"),
        (AssertionError(), 500, "INTERNAL"),
        (RecursionError(), 500, "INTERNAL"),
        (e.Unavailable("down"), 503, "UNAVAILABLE"),
        (_dbapi(asyncmy_errors.OperationalError(2013, "Lost connection")), 503, "UNAVAILABLE"),
        (sa.exc.TimeoutError("QueuePool limit reached"), 503, "UNAVAILABLE"),
        (ConnectionRefusedError(111, "refused"), 503, "UNAVAILABLE"),
        (ConcurrentChange("tasks: 0 of 1 rows matched"), 503, "UNAVAILABLE"),
        (e.InvalidArgument("x", "outcome"), 400, "INVALID_ARGUMENT"),
        (e.IllegalTransition("x"), 409, "STATE_CONFLICT"),
    ],
)
def test_wire_error(exc: BaseException, status: int, code: str) -> None:
    wire = wire_error(exc)
    assert (wire.status, wire.code) == (status, code)
    assert (wire is INTERNAL) is (not is_database_failure(exc) and status == 500)


@pytest.mark.parametrize(
    ("exc", "lost"),
    [
        (asyncmy_errors.InterfaceError(0, "Not connected"), True),
        (asyncmy_errors.OperationalError(2013, "Lost connection to server during query"), True),
        (asyncmy_errors.OperationalError(2006, "MySQL server has gone away"), True),
        (asyncmy_errors.OperationalError(1927, "Connection was killed"), True),
        (ConnectionResetError(104, "reset by peer"), True),
        (_dbapi(asyncmy_errors.InterfaceError(0, "Not connected")), True),
        (translated("SELECT 1", (), AttributeError("'NoneType' has no attribute 'write'")), True),
        (asyncmy_errors.OperationalError(1213, "Deadlock found"), False),
        (asyncmy_errors.OperationalError(1205, "Lock wait timeout"), False),
        (_dbapi(asyncmy_errors.IntegrityError(1062, "Duplicate entry")), False),
        (asyncmy_errors.OperationalError(2003, "Can't connect"), False),  # nothing pooled
        (TypeError("x"), False),
    ],
)
def test_lost_connection(exc: BaseException, lost: bool) -> None:
    assert is_lost_connection(exc) is lost
