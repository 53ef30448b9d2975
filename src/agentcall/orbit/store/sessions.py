"""Console sessions (rows and queries; the rules are `agentcall.orbit.domain.sessions`): a row per
signed-in browser, keyed by the SHA-256 of its session id, bound to a token. A dead session
is deleted when it is read, and every sign-in deletes the sessions past their expiry."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.sessions import SessionRow
from agentcall.orbit.domain.tokens import TokenRecord
from agentcall.orbit.store import tenancy
from agentcall.orbit.store.tables import console_sessions, tokens

c = console_sessions.c


async def insert(
    conn: AsyncConnection, digest: str, token_id: str, now: datetime, expires_at: datetime
) -> None:
    await conn.execute(
        console_sessions.insert().values(
            id_sha256=digest, token_id=token_id, created_at=now, seen_at=now, expires_at=expires_at
        )
    )


async def load(conn: AsyncConnection, digest: str) -> tuple[SessionRow, TokenRecord | None] | None:
    """The session and its token as it is now (None: the token is gone), or None."""
    query = (
        sa.select(c.token_id, c.created_at, c.seen_at, c.expires_at, tokens.c.secret_sha256)
        .select_from(console_sessions.outerjoin(tokens, tokens.c.id == c.token_id))
        .where(c.id_sha256 == digest)
    )
    found = (await conn.execute(query)).first()
    if found is None:
        return None
    row = SessionRow(found.token_id, found.created_at, found.seen_at, found.expires_at)
    if found.secret_sha256 is None:
        return row, None
    return row, await tenancy.load_token(conn, found.secret_sha256)


async def touch(conn: AsyncConnection, digest: str, now: datetime) -> None:
    await conn.execute(console_sessions.update().where(c.id_sha256 == digest).values(seen_at=now))


async def delete(conn: AsyncConnection, digest: str) -> None:
    await conn.execute(console_sessions.delete().where(c.id_sha256 == digest))


async def delete_of_token(conn: AsyncConnection, token_id: str) -> int:
    """Delete every session of the token ("sign out everywhere"); how many went."""
    gone = await conn.execute(console_sessions.delete().where(c.token_id == token_id))
    return int(gone.rowcount)


async def delete_expired(conn: AsyncConnection, now: datetime, idle_since: datetime) -> int:
    """Delete the sessions past their absolute expiry or unused since `idle_since`."""
    gone = await conn.execute(
        console_sessions.delete().where(sa.or_(c.expires_at <= now, c.seen_at <= idle_since))
    )
    return int(gone.rowcount)


async def count_of_token(conn: AsyncConnection, token_id: str) -> int:
    query = sa.select(sa.func.count()).select_from(console_sessions).where(c.token_id == token_id)
    return int((await conn.execute(query)).scalar_one())
