"""Cached, verified configuration reads (D-CFG-1..4).

SIP and task configs are kept ``config_ttl_s`` (~60 s) and then read again in full; a
quota is kept at most ``quota_ttl_s`` (≤ 60 s) and never past its ``valid_until``. A
failed read is remembered for at most one second (so a burst of commands does not hammer
the SaaS) and yields *no* value: the caller rejects new admission, nothing falls back to
stale data, an empty config or "unlimited". Concurrent reads of one key share a request.
The last failure of each read is kept (:meth:`ConfigCache.failure`) so that admission can
tell a transient outage (hold the commands, D-NOTE-2) from a definitive answer.

Agent versions are immutable (D-CFG-2): the first content digest seen for an
``agent_version_id`` is persisted; a later body with the same id and other content is
refused as invalid.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypedDict, TypeVar

from agentcall.dispatcher.domain.model import SipSnapshot, TaskConfig, TenantQuota
from agentcall.dispatcher.domain.outage import SIP, Read, ReadKey
from agentcall.dispatcher.saas.client import SaasClient, SaasError, SaasInvalid, SaasRefused
from agentcall.dispatcher.saas.parse import parse_quota, parse_sip, parse_task
from agentcall.dispatcher.store import agents
from agentcall.dispatcher.store.db import Database

T = TypeVar("T")
FAILURE_TTL_S = 1.0


@dataclass(frozen=True)
class TaskLookup:
    """Result of a task config read: a config, a 404 (``missing``), or an error."""

    config: TaskConfig | None
    missing: bool = False
    error: str | None = None


class CacheStatus(TypedDict):
    """What the config cache holds (served as ``config`` in /status)."""

    sip_revision: int | None
    sip_verified_now: bool
    cached_tasks: int
    cached_quotas: int
    # Per read (``sip``, ``task:<task_id>``, ``quota:<tenant_id>``): its last success (ISO).
    last_success: dict[str, str]
    # The concurrency limits of the cached configs: by task, tenant and trunk id.
    limits: dict[str, dict[str, int | None]]


@dataclass
class _Entry(Generic[T]):
    value: T
    expires: float


class _Slot(Generic[T]):
    """TTL cache + single flight for one family of keys."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry[T]] = {}
        self._flights: dict[str, asyncio.Future[T]] = {}

    def fresh(self, key: str) -> _Entry[T] | None:
        entry = self._entries.get(key)
        if entry is not None and entry.expires > time.monotonic():
            return entry
        return None

    async def get(
        self, key: str, load: Callable[[], Awaitable[tuple[T, float]]], bypass: bool = False
    ) -> T:
        if not bypass:
            cached = self.fresh(key)
            if cached is not None:
                return cached.value
            if key in self._flights:
                return await asyncio.shield(self._flights[key])
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._flights[key] = future
        try:
            value, ttl = await load()
            self._entries[key] = _Entry(value, time.monotonic() + ttl)
            future.set_result(value)
            return value
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved
            raise
        finally:
            if self._flights.get(key) is future:
                del self._flights[key]

    def drop(self, key: str) -> None:
        self._entries.pop(key, None)

    def entries(self) -> list[tuple[str, _Entry[T]]]:
        """Every entry, expired ones too (the last value read of each key)."""
        return list(self._entries.items())

    def __len__(self) -> int:
        return len(self._entries)


class ConfigCache:
    """Verified SIP, task and quota configuration for admission."""

    def __init__(
        self,
        client: SaasClient,
        db: Database,
        *,
        config_ttl_s: float,
        quota_ttl_s: float,
        clock: Callable[[], datetime],
        on_error: Callable[[SaasError], None],
    ) -> None:
        self._client = client
        self._db = db
        self._config_ttl = config_ttl_s
        self._quota_ttl = quota_ttl_s
        self._clock = clock
        self._on_error = on_error
        self._sip: _Slot[SipSnapshot | None] = _Slot()
        self._tasks: _Slot[TaskLookup] = _Slot()
        self._quotas: _Slot[TenantQuota | None] = _Slot()
        self._digests: dict[str, str] = {}
        self._revisions: dict[str, int] = {}
        self._reloaded: dict[str, int] = {}
        self._failures: dict[ReadKey, SaasError] = {}
        self._succeeded: dict[str, datetime] = {}
        self.last_sip: SipSnapshot | None = None

    @property
    def dispatcher_id(self) -> str:
        return self._client.dispatcher_id

    def _failed(self, exc: SaasError, key: ReadKey) -> float:
        self._on_error(exc)
        self._failures[key] = exc
        return min(FAILURE_TTL_S, self._config_ttl)

    def _ok(self, key: ReadKey) -> None:
        self._failures.pop(key, None)
        self._succeeded[str(key)] = self._clock()

    def failure(self, key: ReadKey) -> SaasError | None:
        """The failure of the last read of ``key``, None if it succeeded (or never ran)."""
        return self._failures.get(key)

    async def sip(self, fresh: bool = False) -> SipSnapshot | None:
        return await self._sip.get("sip", self._load_sip, bypass=fresh)

    async def _load_sip(self) -> tuple[SipSnapshot | None, float]:
        try:
            snapshot = parse_sip(await self._client.sip(), self.dispatcher_id)
        except SaasError as exc:
            return None, self._failed(exc, SIP)
        self._ok(SIP)
        self.last_sip = snapshot
        return snapshot, self._config_ttl

    async def task(self, task_id: str, fresh: bool = False) -> TaskLookup:
        """Cached task config; ``fresh=True`` bypasses the cache (D-CTL-3).

        A cached config older than the revision discovery reported is never served: it is
        read again (D-CTL-5: an old config never overrides a higher task_revision).
        """
        entry = self._tasks.fresh(task_id)
        config = entry.value.config if entry is not None else None
        wanted = self._revisions.get(task_id, 0)
        stale = config is not None and config.task_revision < wanted
        if stale and self._reloaded.get(task_id) != wanted:
            self._reloaded[task_id] = wanted  # one reload per revision, not one per command
        else:
            stale = False
        return await self._tasks.get(
            task_id, functools.partial(self._load_task, task_id), bypass=fresh or stale
        )

    def note_revision(self, task_id: str, revision: int) -> None:
        """Discovery saw ``revision`` of a task: older cached configs are stale."""
        self._revisions[task_id] = max(revision, self._revisions.get(task_id, 0))

    async def _load_task(self, task_id: str) -> tuple[TaskLookup, float]:
        key = ReadKey(Read.TASK, task_id)
        try:
            config = parse_task(await self._client.task(task_id), self.dispatcher_id, task_id)
            await self._check_agent_version(config)
        except SaasRefused as exc:
            ttl = self._failed(exc, key)
            return TaskLookup(None, missing=exc.not_found, error=exc.code), ttl
        except SaasError as exc:
            return TaskLookup(None, error=exc.code), self._failed(exc, key)
        self._ok(key)
        return TaskLookup(config), self._config_ttl

    async def _check_agent_version(self, config: TaskConfig) -> None:
        agent = config.agent
        known = self._digests.get(agent.agent_version_id)
        if known is None:
            now = self._clock()
            same = await self._db.write(
                agents.remember, agent.agent_version_id, agent.content_sha256, now
            )
            if same:
                self._digests[agent.agent_version_id] = agent.content_sha256
                return
        elif known == agent.content_sha256:
            return
        raise SaasInvalid(
            "task",
            200,
            "agent_version_content_changed",
            f"agent_version_id {agent.agent_version_id} arrived with different content",
        )

    async def quota(
        self, tenant_id: str, tenant_key: str, fresh: bool = False
    ) -> TenantQuota | None:
        key = f"{tenant_id}\x00{tenant_key}"
        load = functools.partial(self._load_quota, tenant_id, tenant_key)
        return await self._quotas.get(key, load, bypass=fresh)

    async def _load_quota(
        self, tenant_id: str, tenant_key: str
    ) -> tuple[TenantQuota | None, float]:
        key = ReadKey(Read.QUOTA, tenant_id)
        try:
            raw = await self._client.quota(tenant_id)
            quota = parse_quota(raw, self.dispatcher_id, tenant_id, tenant_key)
        except SaasError as exc:
            return None, self._failed(exc, key)
        self._ok(key)
        remaining = (quota.valid_until - self._clock()).total_seconds()
        return quota, max(0.0, min(self._quota_ttl, remaining))

    def drop_task(self, task_id: str) -> None:
        """Forget a task's config (discovery ``removed``, D-DISC-8)."""
        self._tasks.drop(task_id)
        self._revisions.pop(task_id, None)
        self._succeeded.pop(str(ReadKey(Read.TASK, task_id)), None)

    def status(self) -> CacheStatus:
        sip = self.last_sip
        entry = self._sip.fresh("sip")
        return CacheStatus(
            sip_revision=sip.revision if sip else None,
            sip_verified_now=entry is not None and entry.value is not None,
            cached_tasks=len(self._tasks),
            cached_quotas=len(self._quotas),
            last_success={key: at.isoformat() for key, at in sorted(self._succeeded.items())},
            limits=self._limits(),
        )

    def _limits(self) -> dict[str, dict[str, int | None]]:
        tasks = {t: e.value.config for t, e in self._tasks.entries() if e.value.config}
        quotas = [e.value for _, e in self._quotas.entries() if e.value is not None]
        trunks = self.last_sip.trunks.values() if self.last_sip else ()
        return {
            "tasks": {t: c.max_concurrent_calls for t, c in sorted(tasks.items())},
            "tenants": {q.tenant_id: q.max_concurrent_calls for q in quotas},
            "trunks": {t.trunk_id: t.max_concurrent_calls for t in trunks},
        }
