"""Console sign-in, resume and sign-out (docs/orbit/console.md "Sessions"). The console
reaches its sessions only through `ConsoleSessions`; the app's assembly builds it over the
server's database. Every resume reads the session and its token afresh (no cache): a
signed-out session or a revoked token is refused on the next request, on every process."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agentcall.orbit.domain.errors import Unauthenticated
from agentcall.orbit.domain.sessions import (
    SessionTimes,
    Verdict,
    expires_at,
    is_session_id,
    new_session_id,
    session_digest,
    verdict,
)
from agentcall.orbit.domain.tokens import Permission, Principal, authenticate
from agentcall.orbit.store import sessions
from agentcall.orbit.store.db import Database

Authenticate = Callable[[str], Awaitable[Principal]]


@dataclass(frozen=True, slots=True)
class SignedIn:
    session_id: str  # for the cookie only; the store keeps its digest
    principal: Principal
    max_age_s: int  # the cookie's lifetime: the session's absolute expiry


class ConsoleSessions:
    def __init__(self, db: Database, times: SessionTimes, authenticate: Authenticate) -> None:
        self.db = db
        self.times = times
        self._authenticate = authenticate  # a bearer secret -> its principal (the API's)

    async def sign_in(self, secret: str, replaces: str | None = None) -> SignedIn:
        """A new session on the token `secret` (refused like an API request, and without
        tasks:read: the console only shows); the session `replaces` (the browser's
        previous one) ends. Nothing is written for a refused token."""
        principal = await self._authenticate(secret)
        principal.require(Permission.READ)
        session_id = new_session_id()

        async def once() -> timedelta:
            async with self.db.write() as conn:
                now = datetime.now(UTC)
                end = expires_at(now, self.times, principal.expires_at)
                await sessions.delete_expired(conn, now, now - self.times.idle)
                if is_session_id(replaces):
                    assert replaces is not None
                    await sessions.delete(conn, session_digest(replaces))
                await sessions.insert(
                    conn, session_digest(session_id), principal.token_id, now, end
                )
                return end - now

        left = await self.db.retrying(once)
        return SignedIn(session_id, principal, max(1, int(left.total_seconds())))

    async def resume(self, session_id: str | None) -> Principal | None:
        """The principal of a live session, or None (unknown, signed out, idle too long,
        expired, or its token revoked or expired): a dead session is deleted."""
        if not is_session_id(session_id):
            return None
        assert session_id is not None
        digest = session_digest(session_id)

        async def once() -> Principal | None:
            async with self.db.read() as conn:
                found = await sessions.load(conn, digest)
            if found is None:
                return None
            row, record = found
            now = datetime.now(UTC)
            state = verdict(row, now, self.times)
            try:
                principal = None if state is Verdict.DEAD else authenticate(record, now)
            except Unauthenticated:
                principal = None
            if principal is None or state is Verdict.TOUCH:
                async with self.db.write() as conn:
                    if principal is None:
                        await sessions.delete(conn, digest)
                    else:
                        await sessions.touch(conn, digest, now)
            return principal

        return await self.db.retrying(once)

    async def sign_out(self, session_id: str | None) -> None:
        if not is_session_id(session_id):
            return
        assert session_id is not None

        async def once() -> None:
            async with self.db.write() as conn:
                await sessions.delete(conn, session_digest(session_id))

        await self.db.retrying(once)
