"""The discovery loop (D-DISC-1..9): read pages from the persisted cursor to an empty page.

Each page is validated by :func:`agentcall.dispatcher.domain.discovery.check_page`; an accepted page
and its ``next_cursor`` commit in one transaction (D-DISC-5). Any failure — HTTP error,
invalid body, rejected page, failed commit — closes the gate (no new admission), keeps
every local fact and the cursor, records the error, and retries with the same cursor after
the D's reconnect policy's delay for the failed rounds in a row (``domain/reconnect.py``:
from an eighth of ``error_backoff_s`` up to it, jittered; one caught-up round resets the
count); there is no cursor reset (D-DISC-9). After catching up it re-polls every
``interval_s`` (~30 s) and can be woken early.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime

from agentcall.dispatcher import contracts
from agentcall.dispatcher.discovery import transaction
from agentcall.dispatcher.discovery.gate import Gate
from agentcall.dispatcher.domain.discovery import (
    DiscoveredTask,
    PageAccepted,
    PageRejected,
    PageRejectReason,
    check_page,
)
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.errors import DispatcherError
from agentcall.dispatcher.logs import log
from agentcall.dispatcher.saas.client import SaasClient, SaasError
from agentcall.dispatcher.store import rejected, tasks
from agentcall.dispatcher.store.db import Database

LOG = logging.getLogger("dispatcher.discovery")
OnTasks = Callable[[dict[str, LocalTask], tuple[DiscoveredTask, ...]], Awaitable[None]]


class DiscoveryFailed(DispatcherError):
    """A discovery round failed; admission stays closed until a later round catches up."""


@dataclass
class _Progress:
    cursor: int = 0
    caught_up: bool = False
    caught_up_at: datetime | None = None
    pages_applied: int = 0
    pages_with_tasks: int = 0
    rows_applied: int = 0
    pages_rejected: int = 0
    errors: int = 0
    last_error: str | None = None
    last_error_at: datetime | None = None
    rejected_by_reason: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class DiscoveryStatus:
    cursor: int
    caught_up: bool
    caught_up_at: datetime | None
    pages_applied: int
    pages_with_tasks: int
    rows_applied: int
    pages_rejected: int
    errors: int
    last_error: str | None
    last_error_at: datetime | None
    rejected_by_reason: dict[str, int]


class DiscoveryLoop:
    def __init__(
        self,
        client: SaasClient,
        db: Database,
        gate: Gate,
        *,
        interval_s: float,
        error_backoff_s: float,
        clock: Callable[[], datetime],
        on_tasks: OnTasks,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._client = client
        self._db = db
        self._gate = gate
        self._interval = interval_s
        self._policy = ReconnectPolicy(base_s=error_backoff_s / 8, cap_s=error_backoff_s)
        self._jitter = jitter
        self.failures = 0  # failed rounds in a row; 0 after a round that caught up
        self._clock = clock
        self._on_tasks = on_tasks
        self._wake = asyncio.Event()
        self._progress = _Progress()

    def wake(self) -> None:
        self._wake.set()

    def status(self) -> DiscoveryStatus:
        return DiscoveryStatus(**asdict(self._progress))

    async def run(self) -> None:
        self._progress.cursor = await self._db.read(tasks.get_cursor)
        while True:
            delay = await self.round()
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except TimeoutError:
                pass
            self._wake.clear()

    async def round(self) -> float:
        """One catch-up; returns the delay before the next round."""
        try:
            await self.catch_up()
        except DiscoveryFailed as exc:
            self._fail(str(exc))
            self.failures += 1
            return self._policy.delay(self.failures, self._jitter())
        self.failures = 0
        now = self._clock()
        self._progress.caught_up, self._progress.caught_up_at = True, now
        self._gate.lift("discovery", now)
        return self._interval

    def _fail(self, why: str) -> None:
        self._progress.caught_up = False
        self._progress.errors += 1
        self._progress.last_error, self._progress.last_error_at = why, self._clock()
        self._gate.close("discovery", why)
        log(LOG, logging.WARNING, "discovery.failed", error=why, cursor=self._progress.cursor)

    async def catch_up(self) -> None:
        """Read pages until an empty one (D-DISC-3), whatever the page size."""
        while True:
            after = await self._db.read(tasks.get_cursor)
            self._progress.cursor = after
            page = await self._read_page(after)
            stored = await self._apply(page, after)
            await self._on_tasks(stored, page.tasks)
            if page.caught_up:
                return

    async def _read_page(self, after: int) -> PageAccepted:
        try:
            raw = await self._client.discovery(after)
        except SaasError as exc:
            raise DiscoveryFailed(f"GET tasks?after={after}: {exc}") from exc
        known = await self._db.read(tasks.load_tasks)
        result = _check(raw, after, self._client.dispatcher_id, known)
        if isinstance(result, PageRejected):
            await self._db.write(
                rejected.record,
                source=f"http:discovery?after={after}",
                reason=result.reason.value,
                detail=result.detail,
                raw=raw,
                now=self._clock(),
            )
            # counted with no await before _fail records last_error: a status read never
            # sees the count without its error
            self._progress.pages_rejected += 1
            by_reason = self._progress.rejected_by_reason
            by_reason[result.reason.value] = by_reason.get(result.reason.value, 0) + 1
            raise DiscoveryFailed(f"page after={after} rejected: {result.reason}: {result.detail}")
        return result

    async def _apply(self, page: PageAccepted, after: int) -> dict[str, LocalTask]:
        try:
            stored = await self._db.write(
                transaction.apply_page, page.tasks, after, page.next_cursor, self._clock()
            )
        except Exception as exc:  # a failed commit never advances the cursor (D-DISC-5)
            raise DiscoveryFailed(f"page after={after} not committed: {exc!r}") from exc
        self._progress.cursor = page.next_cursor
        self._progress.pages_applied += 1
        self._progress.rows_applied += len(page.tasks)
        self._progress.pages_with_tasks += 1 if page.tasks else 0
        if page.tasks:
            log(
                LOG,
                logging.INFO,
                "discovery.page",
                after=after,
                cursor=page.next_cursor,
                tasks=len(page.tasks),
            )
        return stored


def _check(
    raw: bytes, after: int, dispatcher_id: str, known: dict[str, LocalTask]
) -> PageAccepted | PageRejected:
    try:
        body = contracts.decode(contracts.Kind.DISCOVERY_PAGE, raw)
    except contracts.ContractError as exc:
        return PageRejected(PageRejectReason.SCHEMA_VIOLATION, str(exc)[:300])
    assert isinstance(body, dict)
    return check_page(body, after=after, dispatcher_id=dispatcher_id, known=known)
