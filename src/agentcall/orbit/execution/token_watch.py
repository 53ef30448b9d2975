"""Worker sessions end when their token is revoked or expires, whatever the worker is doing.

A worker's token is checked at the WebSocket handshake; afterwards this watch re-checks the
tokens of every open session of this process, with one statement for all of them, every
`interval_s` (`ORBIT_WORKER_TOKEN_CHECK_MS`, default 1 s), and wakes up early for the next
expiry. A session whose token is revoked, expired or gone is ended at once: it stops
receiving leases (its `stop` callback runs first, synchronously, so no lease round or eager
dispatch grants it anything afterwards) and its connection is closed with 4401 (`end`).
Nothing here depends on the worker sending anything: an idle worker and one busy with short
tasks are ended alike. The check reads the database's current rows (no cache), so a
revocation committed anywhere ends every session on that token within one interval plus one
query. If the database cannot be read the sessions go on (they cannot be leased anything
then either) and the failure is logged; the next interval tries again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from agentcall.orbit.domain.tokens import session_valid
from agentcall.orbit.store import tenancy
from agentcall.orbit.store.db import Database

log = logging.getLogger("orbit.workers")
DEFAULT_INTERVAL_S = 1.0
MIN_WAIT_S = 0.01


@dataclass(frozen=True, slots=True)
class Watched:
    """One open worker session: its token, the token's expiry, and how to end it."""

    token_id: str
    expires_at: datetime | None
    stop: Callable[[], None]  # no more leases, at once
    end: Callable[[], Awaitable[None]]  # close the connection (4401)


class TokenWatch:
    def __init__(
        self,
        db: Database,
        interval_s: float = DEFAULT_INTERVAL_S,
        *,
        on_ended: Callable[[int], None] = lambda n: None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.db = db
        self.interval_s = interval_s
        self.on_ended = on_ended
        self.clock = clock
        self.sessions: dict[str, Watched] = {}
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    def add(self, connection_id: str, watched: Watched) -> None:
        self.sessions[connection_id] = watched
        self._changed.set()  # its expiry may be the next one

    def remove(self, connection_id: str) -> None:
        self.sessions.pop(connection_id, None)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="orbit-token-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def check(self) -> int:
        """Re-check every watched session's token now; end those that may not go on.
        Returns how many were ended."""
        sessions = dict(self.sessions)
        if not sessions:
            return 0
        states = await self.db.retrying(lambda: self._load({w.token_id for w in sessions.values()}))
        now = self.clock()
        ended = [
            (connection_id, watched)
            for connection_id, watched in sessions.items()
            if not session_valid(
                watched.token_id in states, *states.get(watched.token_id, (None, None)), now
            )
        ]
        for connection_id, watched in ended:
            watched.stop()
            self.sessions.pop(connection_id, None)
        await asyncio.gather(*(watched.end() for _, watched in ended), return_exceptions=True)
        if ended:
            log.info(
                "worker sessions ended: token revoked or expired", extra={"sessions": len(ended)}
            )
            self.on_ended(len(ended))
        return len(ended)

    async def _load(
        self, token_ids: set[str]
    ) -> dict[str, tuple[datetime | None, datetime | None]]:
        async with self.db.single_read() as conn:
            return dict(await tenancy.token_states(conn, token_ids))

    async def _run(self) -> None:
        while True:
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("worker token check failed; trying again")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._wait()):
                    await self._changed.wait()

    def _wait(self) -> float:
        """Until the next check: the interval, or sooner when a token expires before it."""
        wait = self.interval_s
        now = self.clock()
        for watched in self.sessions.values():
            if watched.expires_at is not None:
                wait = min(wait, (watched.expires_at - now).total_seconds())
        return max(MIN_WAIT_S, wait)
