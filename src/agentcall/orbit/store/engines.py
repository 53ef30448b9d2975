"""The SQLAlchemy engines of the two dialects: SQLite (WAL, `synchronous=FULL`, foreign keys,
`BEGIN` emitted by us) and MySQL/MariaDB (READ COMMITTED, utf8mb4, a reset on return only when
a transaction is open). `store/db.py` opens them and owns what differs between them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def sqlite_engine(url: sa.URL) -> AsyncEngine:
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url, pool_size=8, max_overflow=8)

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        for pragma in (
            "journal_mode=WAL",
            "synchronous=FULL",
            "foreign_keys=ON",
            "busy_timeout=10000",
        ):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        conn.exec_driver_sql(conn.get_execution_options().get("orbit_begin", "BEGIN"))

    return engine


def mysql_engine(url: sa.URL, pool_size: int, *, autocommit: bool = False) -> AsyncEngine:
    if "charset" not in url.query:
        url = url.update_query_dict({"charset": "utf8mb4"})
    if autocommit:  # never inside a transaction, so nothing to reset on return
        half = max(2, pool_size // 2)
        return create_async_engine(
            url,
            pool_size=half,
            max_overflow=half,
            pool_recycle=3600,
            isolation_level="AUTOCOMMIT",
            pool_reset_on_return=None,
        )
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_recycle=3600,
        isolation_level="READ COMMITTED",
        pool_reset_on_return=None,  # see _reset below
    )

    @event.listens_for(engine.sync_engine, "reset")
    def _reset(dbapi_connection: Any, _record: Any, state: Any) -> None:
        """SQLAlchemy rolls back on return to the pool even after a commit (one more round
        trip per transaction); roll back only when the server says a transaction is open."""
        if not state.asyncio_safe or state.terminate_only or state.transaction_was_reset:
            return
        if dbapi_connection.driver_connection.get_transaction_status():
            dbapi_connection.rollback()

    return engine
