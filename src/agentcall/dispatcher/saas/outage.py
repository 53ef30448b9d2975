"""SaaS outages: the reads that keep failing, their retry loop and the start-up SIP gate.

Admission reports a transient failure of a read (:mod:`agentcall.dispatcher.domain.outage`)
with :meth:`SaasOutages.fail`; from then on the commands depending on it are held (left in,
or returned to, their queue: their consumers stop) until :meth:`run` reads it again
successfully — after capped, jittered backoff — or the SaaS answers definitively (then
admission decides as before). Each change wakes the consumer registry.

The SIP snapshot is also read here at start: the D admits nothing before it holds a
verified snapshot (gate ``sip``), and a transient SIP failure later closes the whole gate
(``saas.sip``) until the snapshot reads again (D-NOTE-2, D-CFG-1).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypedDict

from agentcall.dispatcher.domain.outage import (
    SIP,
    STALE,
    Outage,
    Read,
    ReadKey,
    backoff,
    blocking,
    transient,
)
from agentcall.dispatcher.logs import log
from agentcall.dispatcher.saas.cache import ConfigCache
from agentcall.dispatcher.store import tasks
from agentcall.dispatcher.store.db import Database

LOG = logging.getLogger("dispatcher.saas")
START_GATE = "sip"  # no verified SIP snapshot yet since start
OUTAGE_GATE = "saas.sip"


@dataclass(frozen=True)
class ReadOutcome:
    """What one retry of a read gave: success, or the failure's HTTP status and code."""

    ok: bool
    status: int | None = None
    code: str = ""
    message: str = ""


Retry = Callable[[ReadKey, str], Awaitable[ReadOutcome]]  # (read, tenant_key) → outcome


class Gate(Protocol):
    """The D's admission gate (:class:`agentcall.dispatcher.discovery.gate.Gate`)."""

    def close(self, name: str, why: str) -> None: ...

    def lift(self, name: str, now: datetime) -> None: ...


class OutageEntry(TypedDict):
    read: str
    key: str
    since: str
    failures: int
    next_retry_at: str
    last_error: str


class OutagesStatus(TypedDict):
    """``/status`` → ``outages``: every read now failing, and failures counted by read."""

    active: list[OutageEntry]
    read_failures: dict[str, int]


class SaasOutages:
    def __init__(
        self,
        gate: Gate,
        *,
        clock: Callable[[], datetime],
        base_s: float,
        cap_s: float,
        on_change: Callable[[], None],
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._gate = gate
        self._clock = clock
        self._base, self._cap = base_s, cap_s
        self._on_change = on_change
        self._rng = rng
        self._outages: dict[ReadKey, Outage] = {}
        self._keys: frozenset[ReadKey] = frozenset()
        self._wake = asyncio.Event()
        self.failures: dict[str, int] = {r.value: 0 for r in Read}
        gate.close(START_GATE, "no verified SIP snapshot yet")

    # --- what admission asks ---------------------------------------------------------
    def blocking(self, task_id: str, tenant_id: str) -> ReadKey | None:
        return blocking(self._keys, task_id, tenant_id) if self._keys else None

    @property
    def active(self) -> frozenset[ReadKey]:
        return self._keys

    def transient(self, status: int | None, code: str) -> bool:
        return transient(status, code)

    def fail(self, key: ReadKey, status: int | None, code: str, tenant_key: str = "") -> None:
        """A read failed transiently: hold what depends on it, schedule its retry."""
        now = self._clock()
        self.failures[key.read.value] += 1
        known = self._outages.get(key)
        failures = 1 if known is None else known.failures + 1
        delay = backoff(failures, self._base, self._cap, self._rng())
        error = f"HTTP {status} {code}" if status is not None else code
        self._outages[key] = Outage(
            key,
            known.since if known else now,
            failures,
            now + timedelta(seconds=delay),
            error,
            tenant_key or (known.tenant_key if known else ""),
        )
        if known is None:
            log(LOG, logging.WARNING, "saas.outage", read=str(key), error=error)
            self._changed()
        if key == SIP:
            self._gate.close(OUTAGE_GATE, f"SIP read failing since {self._outages[key].since}")
        self._wake.set()

    def recovered(self, key: ReadKey) -> None:
        """The read succeeded (or answered definitively): reopen what it held."""
        if key == SIP:
            self._gate.lift(START_GATE, self._clock())
            self._gate.lift(OUTAGE_GATE, self._clock())
        gone = self._outages.pop(key, None)
        if gone is not None:
            log(LOG, logging.INFO, "saas.recovered", read=str(key), failures=gone.failures)
            self._changed()

    def _changed(self) -> None:
        self._keys = frozenset(self._outages)
        self._on_change()

    # --- the retry loop ----------------------------------------------------------------
    async def run(self, retry: Retry) -> None:
        """Verify a SIP snapshot first (retrying), then retry failing reads when due."""
        await self._first_sip(retry)
        while True:
            now = self._clock()
            due = [o for o in self._outages.values() if o.next_retry_at <= now]
            for outage in due:
                await self._retry(retry, outage)
            self._wake.clear()
            pending = [o.next_retry_at for o in self._outages.values()]
            wait = (min(pending) - self._clock()).total_seconds() if pending else 3600.0
            try:
                await asyncio.wait_for(self._wake.wait(), max(0.01, wait))
            except TimeoutError:
                pass

    async def _first_sip(self, retry: Retry) -> None:
        attempt = 0
        while True:
            outcome = await retry(SIP, "")
            if outcome.ok:
                self.recovered(SIP)
                return
            attempt += 1
            why = f"no verified SIP snapshot yet: HTTP {outcome.status} {outcome.code}"
            self._gate.close(START_GATE, why)
            self.failures[Read.SIP.value] += 1
            await asyncio.sleep(backoff(attempt, self._base, self._cap, self._rng()))

    async def _retry(self, retry: Retry, outage: Outage) -> None:
        outcome = await retry(outage.key, outage.tenant_key)
        if outcome.ok or not transient(outcome.status, outcome.code):
            self.recovered(outage.key)
            return
        self.fail(outage.key, outcome.status, outcome.code)

    def status(self) -> OutagesStatus:
        active = [
            OutageEntry(
                read=o.key.read.value,
                key=o.key.key,
                since=o.since.isoformat(),
                failures=o.failures,
                next_retry_at=o.next_retry_at.isoformat(),
                last_error=o.last_error,
            )
            for o in sorted(self._outages.values(), key=lambda o: str(o.key))
        ]
        return OutagesStatus(active=active, read_failures=dict(self.failures))


class CacheRetry:
    """Reads again through the config cache, bypassing it (a :data:`Retry`)."""

    def __init__(self, cache: ConfigCache, db: Database) -> None:
        self._cache = cache
        self._db = db

    async def __call__(self, key: ReadKey, tenant_key: str) -> ReadOutcome:
        if key.read is Read.SIP:
            value: object = await self._cache.sip(fresh=True)
        elif key.read is Read.TASK:
            config = (await self._cache.task(key.key, fresh=True)).config
            if config is not None:
                seen = await self._db.read(tasks.seen_revision, key.key)
                if config.task_revision < seen:  # still a lagging replica (D-NOTE-1)
                    return ReadOutcome(False, 200, STALE, f"revision {config.task_revision}")
            value = config
        else:
            value = await self._cache.quota(key.key, tenant_key, fresh=True)
        if value is not None:
            return ReadOutcome(True)
        failed = self._cache.failure(key)
        if failed is None:
            return ReadOutcome(True)  # nothing to hold on: let admission decide
        return ReadOutcome(False, failed.status, failed.code, str(failed))
