"""Connected workers of this server process and the two loops that serve them: the dispatcher
(push leases within each connection's credit, fair across its queues, woken on submit, requeue
and capacity freed on a connection that may have left work waiting, with a fallback tick) and
the sweeper (expired leases, attempt and task
deadlines, on the database clock). worker-protocol.md §5-§6."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from orbit.domain.jsonvalue import JsonValue
from orbit.domain.leasing import HandlerKey, free_slots, share_slots
from orbit.workers.acks import Grant, Peer
from orbit.workers.batch import Batcher
from orbit.workers.kernel import Kernel, LeaseAsk
from orbit.workers.upkeep import SweepReport, Upkeep

log = logging.getLogger("orbit.workers")
SWEEP_LIMIT = 500
WAITING_SWEEP_S = 1.0  # WAITING tasks past a deadline: scanned about once a second
Send = Callable[[dict[str, JsonValue]], Awaitable[None]]


@dataclass(eq=False, slots=True)
class Link:
    """One open worker connection."""

    peer: Peer
    handlers: frozenset[HandlerKey]
    queue_order: tuple[str, ...]
    capacity: int
    send: Send
    in_flight: set[str] = field(default_factory=set)
    rotation: int = 0
    open: bool = True
    # False once a dispatch round asked on every queue of this link and got fewer tasks than
    # asked everywhere: nothing was left for it, so a freed slot needs no round of its own
    # (new work comes with a notify). True while it may be leaving work waiting.
    saturated: bool = True

    @property
    def free(self) -> int:
        return free_slots(self.capacity, len(self.in_flight)) if self.open else 0


class Hub:
    def __init__(
        self,
        batcher: Batcher,
        kernel: Kernel,
        upkeep: Upkeep,
        *,
        tick_s: float,
        sweep_s: float,
        on_grants: Callable[[int], None] = lambda n: None,
    ) -> None:
        self.batcher = batcher
        self.kernel = kernel
        self.upkeep = upkeep
        self.tick_s = tick_s
        self.sweep_s = sweep_s
        self.on_grants = on_grants
        self.links: dict[str, Link] = {}
        self.owner: dict[str, str] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._supervise(self._dispatch_forever), name="orbit-dispatch"),
            asyncio.create_task(self._supervise(self._sweep_forever), name="orbit-sweeper"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _supervise(self, loop: Callable[[], Awaitable[None]]) -> None:
        """A failing round is logged and retried after a pause; the loop itself never dies."""
        while True:
            try:
                await loop()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("execution loop failed; retrying in 1 s")
                await asyncio.sleep(1.0)

    # ------------------------------------------------------------------ connections
    def add(self, link: Link, held: set[str]) -> None:
        link.in_flight |= held
        for attempt_id in held:
            self.owner[attempt_id] = link.peer.connection_id
        self.links[link.peer.connection_id] = link
        self.notify()

    def remove(self, link: Link) -> None:
        link.open = False
        self.links.pop(link.peer.connection_id, None)
        for attempt_id in link.in_flight:
            self.owner.pop(attempt_id, None)

    def notify(self) -> None:
        """New work may be ready (submit, requeue) or capacity freed: dispatch now."""
        self._wake.set()

    def ended(self, attempt_id: str) -> None:
        """An attempt of this process ended: its slot is free. Dispatch now only if its
        connection may have left work waiting (see `Link.saturated`); otherwise the freed
        slot waits for the next notify or tick, and no empty lease transaction is run."""
        connection_id = self.owner.pop(attempt_id, None)
        link = self.links.get(connection_id) if connection_id else None
        if link is not None:
            link.in_flight.discard(attempt_id)
            if link.saturated:
                self._wake.set()

    def tell_cancel(self, attempt_id: str) -> None:
        """A cancel was committed for this attempt: push `cancel_requested` to its connection
        if it is here (the heartbeat acks repeat it anywhere, docs/orbit/p3.md §3)."""
        connection_id = self.owner.get(attempt_id)
        link = self.links.get(connection_id) if connection_id else None
        if link is not None:
            cancel: dict[str, JsonValue] = {
                "type": "cancel", "attempt_id": attempt_id, "reason": "cancel_requested",
            }  # fmt: skip
            asyncio.get_running_loop().create_task(_quietly(link.send(cancel)))

    # ------------------------------------------------------------------ dispatcher
    async def _dispatch_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.tick_s):  # no extra task per wait (wait_for)
                    await self._wake.wait()
            self._wake.clear()
            if await self.dispatch_round():
                self._wake.set()  # a full share was granted: there may be more

    async def dispatch_round(self) -> bool:
        for link in self.links.values():
            if not link.free:
                link.saturated = True  # not asked this round
        links = sorted((x for x in self.links.values() if x.free), key=lambda x: -x.free)
        plans = []
        for link in links:
            for queue_id, size in share_slots(link.free, link.queue_order, link.rotation):
                plans.append((link, queue_id, size))
            link.rotation += 1
        if not plans:
            return False
        results = await asyncio.gather(*(self._fill(*plan) for plan in plans))
        _mark_saturated(plans, results)
        return any(results)

    async def _fill(self, link: Link, queue_id: str, size: int) -> bool:
        ask = LeaseAsk(link.peer, link.handlers, queue_id, size)
        grants: list[Grant] = await self.batcher.submit("lease", ask)
        for grant in grants:
            link.in_flight.add(grant.attempt_id)
            self.owner[grant.attempt_id] = link.peer.connection_id
        if grants:
            self.on_grants(len(grants))
        if grants:  # sent together: with batch framing they share one frame
            await asyncio.gather(*(_quietly(link.send(grant.message())) for grant in grants))
        if grants and not link.open:  # closed while leasing: shorten these leases too
            await self.batcher.run(partial(self._disconnect, link.peer.connection_id))
        return len(grants) == size

    async def _disconnect(self, connection_id: str, conn: AsyncConnection, now: datetime) -> None:
        await self.upkeep.disconnect(conn, now, connection_id)

    async def disconnect(self, connection_id: str) -> None:
        await self.batcher.run(partial(self._disconnect, connection_id))

    # ------------------------------------------------------------------ sweeper
    async def _sweep_forever(self) -> None:
        every = max(1, round(WAITING_SWEEP_S / self.sweep_s))
        for turn in itertools.count():
            waiting = turn % every == 0
            report = await self.batcher.run(partial(self._sweep, waiting))
            self._after_sweep(report)
            if report.ended < SWEEP_LIMIT:
                await asyncio.sleep(self.sweep_s)

    async def _sweep(self, waiting: bool, conn: AsyncConnection, now: datetime) -> SweepReport:
        return await self.upkeep.sweep(conn, now, SWEEP_LIMIT, waiting=waiting)

    def _after_sweep(self, report: SweepReport) -> None:
        for connection_id, attempt_id, reason in report.cancels:
            link = self.links.get(connection_id)
            self.ended(attempt_id)
            if link is not None:
                cancel: dict[str, JsonValue] = {
                    "type": "cancel", "attempt_id": attempt_id, "reason": reason,
                }  # fmt: skip
                asyncio.get_running_loop().create_task(_quietly(link.send(cancel)))
        if report.wake:
            self.notify()


def _mark_saturated(plans: list[tuple[Link, str, int]], results: list[bool]) -> None:
    """A link stays saturated if one of its fills was full (more may wait) or a queue of it
    was not asked (its share was 0); a short fill means the queue had nothing more for it."""
    full: dict[Link, bool] = {}
    asked: dict[Link, set[str]] = {}
    for (link, queue_id, _), got_all in zip(plans, results, strict=True):
        asked.setdefault(link, set()).add(queue_id)
        full[link] = full.get(link, False) or got_all
    for link, queues in asked.items():
        link.saturated = full[link] or queues != set(link.queue_order)


async def _quietly(sending: Awaitable[Any]) -> None:
    """A send to a connection that just closed is not an error: its leases expire."""
    try:
        await sending
    except Exception:  # noqa: BLE001
        return
