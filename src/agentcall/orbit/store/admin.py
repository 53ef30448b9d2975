"""Operator operations behind `orbit init | queue create | token create | token revoke`,
one transaction each. Secrets are returned once and only their SHA-256 is stored."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.errors import InvalidArgument, NotFound
from agentcall.orbit.domain.tenancy import check_expiry, check_name, check_scopes
from agentcall.orbit.domain.tokens import ALL_PERMISSIONS, Permission, generate_secret, hash_secret
from agentcall.orbit.store import tenancy
from agentcall.orbit.store.db import Database


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token_id: str
    token: str


@dataclass(frozen=True, slots=True)
class Initialized:
    namespace_id: str
    queue_id: str
    token_id: str
    token: str


class Admin:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def init(self, namespace: str, queue: str) -> Initialized:
        """A namespace, its first queue and a token with every permission on that queue."""
        check_name(namespace, "namespace")
        check_name(queue, "queue")
        secret = generate_secret()
        async with self.db.write() as conn:
            now = await self.db.now(conn)
            namespace_id = await self._unique(
                tenancy.insert_namespace(conn, namespace, now), f"namespace {namespace!r} exists"
            )
            queue_id = await tenancy.insert_queue(conn, namespace_id, queue, now)
            token_id = await tenancy.insert_token(
                conn, namespace_id, hash_secret(secret), ALL_PERMISSIONS, [queue_id], None, now
            )
        return Initialized(namespace_id, queue_id, token_id, secret)

    async def create_queue(self, namespace_id: str, name: str) -> str:
        check_name(name, "name")
        async with self.db.write() as conn:
            await self._namespace(conn, namespace_id)
            now = await self.db.now(conn)
            return await self._unique(
                tenancy.insert_queue(conn, namespace_id, name, now),
                f"queue {name!r} exists in this namespace",
            )

    async def create_token(
        self,
        namespace_id: str,
        permissions: Iterable[Permission],
        queue_ids: Iterable[str],
        expires_at: datetime | None,
    ) -> IssuedToken:
        granted, scopes = frozenset(permissions), frozenset(queue_ids)
        if not granted:
            raise InvalidArgument("at least one permission is required", "permission")
        secret = generate_secret()
        async with self.db.write() as conn:
            await self._namespace(conn, namespace_id)
            now = await self.db.now(conn)
            check_expiry(expires_at, now)
            check_scopes(scopes, await tenancy.queue_ids_of(conn, namespace_id))
            token_id = await tenancy.insert_token(
                conn, namespace_id, hash_secret(secret), granted, scopes, expires_at, now
            )
        return IssuedToken(token_id, secret)

    async def revoke_token(self, token_id: str) -> None:
        async with self.db.write() as conn:
            now = await self.db.now(conn)
            if not await tenancy.revoke_token(conn, token_id, now):
                raise NotFound(f"no token {token_id}")

    async def _namespace(self, conn: AsyncConnection, namespace_id: str) -> None:
        if not await tenancy.namespace_exists(conn, namespace_id):
            raise NotFound(f"no namespace {namespace_id}")

    async def _unique(self, insert: Awaitable[str], message: str) -> str:
        try:
            return await insert
        except sa.exc.IntegrityError as exc:
            if self.db.is_duplicate(exc):
                raise InvalidArgument(message) from None
            raise
