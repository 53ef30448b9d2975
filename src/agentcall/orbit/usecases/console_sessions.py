"""Console sign-in, resume and sign-out (docs/orbit/console.md "Sessions"). The console
reaches its sessions only through `ConsoleSessions`; the app's assembly builds it over the
server's database. Every resume reads the session and its token afresh (no cache): a
signed-out session or a revoked token is refused on the next request, on every process.

A sign-in and a sign-out write their audit entry in their own transaction
(`sessions.signin`, `sessions.signout`, target the session's reference: the first 16 hex
digits of its id's SHA-256; `sessions.signout_all`, target the token: "sign out everywhere"
ends every session of the token)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agentcall.orbit.domain.audit import Source, audit_entry
from agentcall.orbit.domain.errors import Unauthenticated
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.sessions import (
    SessionTimes,
    Verdict,
    expires_at,
    is_session_id,
    new_session_id,
    session_digest,
    verdict,
)
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Permission, Principal, authenticate
from agentcall.orbit.store import audit, sessions
from agentcall.orbit.store.db import Database

Authenticate = Callable[[str], Awaitable[Principal]]
REFERENCE_CHARS = 16
SIGN_IN, SIGN_OUT, SIGN_OUT_ALL = "sessions.signin", "sessions.signout", "sessions.signout_all"


def reference(session_id: str) -> str:
    """A session's name in the audit log: it identifies, never opens, the session."""
    return session_digest(session_id)[:REFERENCE_CHARS]


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

    async def sign_in(
        self, secret: str, replaces: str | None = None, source: Source | None = None
    ) -> SignedIn:
        """A new session on the token `secret` (refused like an API request, and without
        tasks:read: the console only shows); the session `replaces` (the browser's
        previous one) ends. Nothing is written for a refused token. `source`: the request's,
        for the audit entry."""
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
                detail: dict[str, JsonValue] = {"expires_at": format_time(end)}
                target = reference(session_id)
                signin = audit_entry(principal, SIGN_IN, "session", target, detail, source=source)
                await audit.insert_entries(conn, [signin], now)
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

    async def sign_out(
        self, session_id: str, principal: Principal, source: Source | None = None
    ) -> None:
        """End the session `session_id` of `principal` (signed in: `resume` returned it)."""
        entry = audit_entry(principal, SIGN_OUT, "session", reference(session_id), source=source)

        async def once() -> None:
            async with self.db.write() as conn:
                await sessions.delete(conn, session_digest(session_id))
                await audit.insert_entries(conn, [entry], datetime.now(UTC))

        await self.db.retrying(once)

    async def sign_out_everywhere(self, principal: Principal, source: Source | None = None) -> int:
        """End every session of `principal`'s token, on every browser; how many ended."""

        async def once() -> int:
            async with self.db.write() as conn:
                ended = await sessions.delete_of_token(conn, principal.token_id)
                detail: dict[str, JsonValue] = {"ended": ended}
                target = principal.token_id
                entry = audit_entry(principal, SIGN_OUT_ALL, "token", target, detail, source=source)
                await audit.insert_entries(conn, [entry], datetime.now(UTC))
                return ended

        return await self.db.retrying(once)
