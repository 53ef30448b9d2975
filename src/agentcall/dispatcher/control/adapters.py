"""Real adapters of the control ports over the D's own components.

* :class:`CacheTaskReader` — the verified config cache, read with ``fresh=True``.
* :class:`RegistryConsumers` — the task consumer registry (suspend / release + wake).
* :class:`CellActiveCalls` — hangs up a task's live calls through the cell; their final
  call.result still comes from the call supervisor as for any other ended call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from agentcall.dispatcher.cell.port import CellPort, CellPortError
from agentcall.dispatcher.domain.control import ReadFailure
from agentcall.dispatcher.domain.model import TaskConfig
from agentcall.dispatcher.logs import log
from agentcall.dispatcher.mq.consumers import TaskConsumers as ConsumerRegistry
from agentcall.dispatcher.saas.cache import ConfigCache
from agentcall.dispatcher.store import executions
from agentcall.dispatcher.store.db import Database

LOG = logging.getLogger("dispatcher.control")
_REFUSED = frozenset({"unauthorized", "dispatcher_not_authorized"})
_INVALID = frozenset(
    {"schema_violation", "identity_or_consistency", "agent_version_content_changed"}
)
LIVE = ("dialing", "ringing", "in_call")


class CacheTaskReader:
    def __init__(self, cache: ConfigCache) -> None:
        self._cache = cache

    async def read_fresh(self, task_id: str) -> TaskConfig | ReadFailure:
        lookup = await self._cache.task(task_id, fresh=True)
        if lookup.config is not None:
            return lookup.config
        if lookup.missing:
            return ReadFailure.NOT_FOUND
        if lookup.error in _REFUSED:
            return ReadFailure.REFUSED
        if lookup.error in _INVALID or (lookup.error or "").startswith("invalid"):
            return ReadFailure.INVALID
        return ReadFailure.UNAVAILABLE

    def forget(self, task_id: str) -> None:
        self._cache.drop_task(task_id)


class RegistryConsumers:
    def __init__(self, registry: ConsumerRegistry, wake: Callable[[], None]) -> None:
        self._registry = registry
        self._wake = wake

    async def suspend(self, task_id: str) -> None:
        await self._registry.suspend(task_id)

    async def reopen(self, task_id: str) -> None:
        self._registry.release(task_id)
        self._wake()


class CellActiveCalls:
    """``hangup`` policy: hang up every live call of the task (D-CTL-2, D-CTL-4).

    Executions accepted just before the barrier may not be dialled yet; they are looked
    at again for ``settle_s`` and hung up once they are, so none escapes the policy.
    """

    def __init__(self, db: Database, cell: CellPort, *, settle_s: float = 2.0) -> None:
        self._db = db
        self._cell = cell
        self._settle = settle_s

    async def hangup_task(self, task_id: str) -> int:
        done: set[str] = set()
        deadline = asyncio.get_running_loop().time() + self._settle
        while True:
            calls = await self._db.read(executions.call_ids, task_id, LIVE)
            live = [c for c in calls if c not in done]
            for call_id in live:
                await self._hangup(task_id, call_id)
                done.add(call_id)
            waiting = await self._db.read(executions.call_ids, task_id, ("accepted",))
            if not waiting or asyncio.get_running_loop().time() > deadline:
                return len(done)
            await asyncio.sleep(0.1)

    async def _hangup(self, task_id: str, call_id: str) -> None:
        try:
            await self._cell.hangup(call_id)
        except CellPortError as exc:  # already ended or cell away: the supervisor resolves it
            log(LOG, logging.INFO, "control.hangup_skipped", task_id=task_id, error=str(exc))
