"""Column types whose storage differs by dialect."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect

from agentcall.orbit.domain.times import as_utc, to_naive_utc


class UtcDateTime(sa.types.TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out; stored naive in UTC.
    MySQL/MariaDB: DATETIME(6); SQLite: fixed-width ISO text that sorts correctly."""

    impl = sa.DateTime
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(sa.DateTime())

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else to_naive_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


def long_text() -> sa.types.TypeEngine[str]:
    """JSON text up to a few MiB (TEXT is 64 KiB on MySQL)."""
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def ident() -> sa.types.TypeEngine[str]:
    """32 lowercase hex characters."""
    return sa.String(32)


MYSQL_TABLE_ARGS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",  # exact, case-sensitive keys and names
}
