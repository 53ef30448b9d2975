"""Namespaces, queues and tokens (rows and queries)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.tokens import Permission, TokenRecord
from agentcall.orbit.store.connector import fetch
from agentcall.orbit.store.tables import namespaces, queues, token_queues, tokens


async def insert_namespace(conn: AsyncConnection, name: str, now: datetime) -> str:
    namespace_id = new_id()
    await conn.execute(namespaces.insert().values(id=namespace_id, name=name, created_at=now))
    return namespace_id


async def namespace_exists(conn: AsyncConnection, namespace_id: str) -> bool:
    query = sa.select(namespaces.c.id).where(namespaces.c.id == namespace_id)
    return (await conn.execute(query)).first() is not None


async def insert_queue(conn: AsyncConnection, namespace_id: str, name: str, now: datetime) -> str:
    queue_id = new_id()
    await conn.execute(
        queues.insert().values(id=queue_id, namespace_id=namespace_id, name=name, created_at=now)
    )
    return queue_id


async def queue_ids_of(conn: AsyncConnection, namespace_id: str) -> frozenset[str]:
    query = sa.select(queues.c.id).where(queues.c.namespace_id == namespace_id)
    return frozenset((await conn.execute(query)).scalars())


async def insert_token(
    conn: AsyncConnection,
    namespace_id: str,
    secret_sha256: str,
    permissions: Iterable[Permission],
    queue_ids: Iterable[str],
    expires_at: datetime | None,
    now: datetime,
    name: str | None = None,
) -> str:
    token_id = new_id()
    await conn.execute(
        tokens.insert().values(
            id=token_id,
            namespace_id=namespace_id,
            secret_sha256=secret_sha256,
            permissions=" ".join(sorted(p.value for p in permissions)),
            expires_at=expires_at,
            revoked_at=None,
            created_at=now,
            name=name,
        )
    )
    rows = [{"token_id": token_id, "queue_id": queue_id} for queue_id in sorted(queue_ids)]
    await conn.execute(token_queues.insert(), rows)
    return token_id


async def revoke_token(conn: AsyncConnection, token_id: str, now: datetime) -> str | None:
    """The token's namespace when it exists (None otherwise); revoking twice keeps the first
    revocation time."""
    found = (
        await conn.execute(sa.select(tokens.c.namespace_id).where(tokens.c.id == token_id))
    ).first()
    if found is None:
        return None
    await conn.execute(
        tokens.update()
        .where(tokens.c.id == token_id, tokens.c.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    return str(found.namespace_id)


async def load_token(conn: AsyncConnection, secret_sha256: str) -> TokenRecord | None:
    rows = await fetch(conn, "token", {"secret_sha256": secret_sha256})
    if not rows:
        return None
    token_id, namespace_id, permissions, expires_at, revoked_at, _, name = rows[0]
    return TokenRecord(
        token_id=token_id,
        namespace_id=namespace_id,
        permissions=frozenset(Permission(p) for p in permissions.split()),
        queue_ids=frozenset(row[5] for row in rows if row[5] is not None),
        expires_at=expires_at,
        revoked_at=revoked_at,
        name=name,
    )


async def token_states(
    conn: AsyncConnection, token_ids: Iterable[str]
) -> dict[str, tuple[datetime | None, datetime | None]]:
    """(revoked_at, expires_at) of each of these tokens that exists, in one statement."""
    ids = sorted(set(token_ids))
    if not ids:
        return {}
    query = sa.select(tokens.c.id, tokens.c.revoked_at, tokens.c.expires_at).where(
        tokens.c.id.in_(ids)
    )
    return {row.id: (row.revoked_at, row.expires_at) for row in await conn.execute(query)}
