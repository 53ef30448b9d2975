"""Operator operations behind `orbit init | queue create | token create | token revoke`,
one transaction each, with its audit entry (origin `cli`, the actor the OS user running the
command, `os:<user>`; docs/orbit/audit.md). Secrets are returned once and only their SHA-256
is stored; neither reaches the audit log."""

from __future__ import annotations

import getpass
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.audit import AuditEntry, Origin
from agentcall.orbit.domain.errors import InvalidArgument, NotFound
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.tenancy import check_expiry, check_name, check_scopes
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import ALL_PERMISSIONS, Permission, generate_secret, hash_secret
from agentcall.orbit.store import audit, tenancy
from agentcall.orbit.store.db import Database


def os_actor() -> str:
    """`os:<user>`: the OS user running the admin command (`unknown` when it has none)."""
    try:
        return f"os:{getpass.getuser()}"[:128]
    except (KeyError, OSError):
        return "os:unknown"


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
    """`actor`: who runs the operations, for the audit log (default: the OS user)."""

    def __init__(self, db: Database, actor: str | None = None) -> None:
        self.db = db
        self.actor = actor or os_actor()

    async def _audit(
        self,
        conn: AsyncConnection,
        now: datetime,
        action: str,
        target: tuple[str, str],
        namespace_id: str,
        detail: dict[str, JsonValue],
    ) -> None:
        kind, target_id = target
        entry = AuditEntry(
            "", self.actor, action, kind, target_id, namespace_id, Origin.CLI, None, None, detail
        )
        await audit.insert_entries(conn, [entry], now)

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
            detail: dict[str, JsonValue] = {"namespace": namespace, "queue": queue}
            await self._audit(
                conn,
                now,
                "namespaces.init",
                ("namespace", namespace_id),
                namespace_id,
                {**detail, "token_id": token_id},
            )
        return Initialized(namespace_id, queue_id, token_id, secret)

    async def create_queue(self, namespace_id: str, name: str) -> str:
        check_name(name, "name")
        async with self.db.write() as conn:
            await self._namespace(conn, namespace_id)
            now = await self.db.now(conn)
            queue_id = await self._unique(
                tenancy.insert_queue(conn, namespace_id, name, now),
                f"queue {name!r} exists in this namespace",
            )
            target = ("queue", queue_id)
            await self._audit(conn, now, "queues.create", target, namespace_id, {"name": name})
            return queue_id

    async def create_token(
        self,
        namespace_id: str,
        permissions: Iterable[Permission],
        queue_ids: Iterable[str],
        expires_at: datetime | None,
        name: str | None = None,
    ) -> IssuedToken:
        granted, scopes = frozenset(permissions), frozenset(queue_ids)
        if not granted:
            raise InvalidArgument("at least one permission is required", "permission")
        if name is not None and not (0 < len(name) <= 128 and name.isprintable()):
            raise InvalidArgument("must be 1-128 printable characters", "name")
        secret = generate_secret()
        async with self.db.write() as conn:
            await self._namespace(conn, namespace_id)
            now = await self.db.now(conn)
            check_expiry(expires_at, now)
            check_scopes(scopes, await tenancy.queue_ids_of(conn, namespace_id))
            token_id = await tenancy.insert_token(
                conn, namespace_id, hash_secret(secret), granted, scopes, expires_at, now, name
            )
            detail: dict[str, JsonValue] = {
                "name": name,
                "permissions": sorted(p.value for p in granted),
                "queue_ids": sorted(scopes),
                "expires_at": None if expires_at is None else format_time(expires_at),
            }
            target = ("token", token_id)
            await self._audit(conn, now, "tokens.create", target, namespace_id, detail)
        return IssuedToken(token_id, secret)

    async def revoke_token(self, token_id: str) -> None:
        async with self.db.write() as conn:
            now = await self.db.now(conn)
            namespace_id = await tenancy.revoke_token(conn, token_id, now)
            if namespace_id is None:
                raise NotFound(f"no token {token_id}")
            await self._audit(conn, now, "tokens.revoke", ("token", token_id), namespace_id, {})

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
