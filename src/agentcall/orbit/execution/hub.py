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
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.dispatch import EVERY, Hinted, pending_after, shares, wants_more
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.execution.acks import Grant
from agentcall.orbit.execution.batch import Batcher
from agentcall.orbit.execution.kernel import LEASE, Kernel, LeaseAsk
from agentcall.orbit.execution.links import Link as Link  # re-exported: the hub's connections
from agentcall.orbit.execution.links import Offering
from agentcall.orbit.execution.observe import ExecutionObserver, Leased
from agentcall.orbit.execution.upkeep import SweepReport, Upkeep

log = logging.getLogger("orbit.workers")
SWEEP_LIMIT = 500
WAITING_SWEEP_S = 1.0  # WAITING tasks past a deadline: scanned about once a second
RETRY_PAUSE_S = 0.2  # after a failed dispatch or sweep round (e.g. the database is down)
T = TypeVar("T")


class Hub:
    """`relay(queue_ids)` tells the other server processes which queues got ready work here
    (`agentcall.orbit.execution.peers`); `offers`, where several processes share the database,
    offers idle links' slots to them (`agentcall.orbit.execution.offers`)."""

    def __init__(
        self,
        batcher: Batcher,
        kernel: Kernel,
        upkeep: Upkeep,
        *,
        tick_s: float,
        sweep_s: float,
        on_grants: Callable[[int], None] = lambda n: None,
        observer: ExecutionObserver | None = None,
        on_empty: Callable[[], None] = lambda: None,
        relay: Callable[[tuple[str, ...]], None] = lambda queue_ids: None,
        offers: Offering | None = None,
    ) -> None:
        self.batcher = batcher
        self.kernel = kernel
        self.upkeep = upkeep
        self.tick_s = tick_s
        self.sweep_s = sweep_s
        self.on_grants = on_grants
        self.on_empty = on_empty  # a lease ask found nothing (taken first, or none ready)
        self.observer = observer or ExecutionObserver()
        self.leased: dict[str, Leased] = {}  # attempts leased here, until they end
        self.links: dict[str, Link] = {}
        self.owner: dict[str, str] = {}
        self._wake = asyncio.Event()
        self._hinted: set[str] = set()  # queues named by notifies since the last round
        self._every = False  # a notify named no queue: the next round asks every queue
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        self.relay = relay
        self.offers = offers

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
        """A failing round is logged and retried after a short pause (so that the loops are
        back within a fraction of a second of the database); the loop itself never dies."""
        while True:
            try:
                await loop()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("execution loop failed; retrying in %.2f s", RETRY_PAUSE_S)
                await asyncio.sleep(RETRY_PAUSE_S)

    # ------------------------------------------------------------------ connections
    def add(self, link: Link, held: set[str]) -> None:
        link.in_flight |= held
        for attempt_id in held:
            self.owner[attempt_id] = link.peer.connection_id
        self.links[link.peer.connection_id] = link
        self._wake.set()  # its queues are pending: the next round asks them all

    def remove(self, link: Link) -> None:
        link.open = False
        self.links.pop(link.peer.connection_id, None)
        for attempt_id in link.in_flight:
            self.owner.pop(attempt_id, None)
            self.leased.pop(attempt_id, None)  # it may end anywhere now: not observed here
        if self.offers is not None and link.offered is not None:
            self.spawn(self._take_back(self.offers, link))

    def spawn(self, work: Awaitable[Any]) -> None:
        """Run `work` (a send, a disconnect) in the background, quietly; referenced until done
        (the event loop keeps only weak references to tasks)."""
        task = asyncio.get_running_loop().create_task(quietly(work))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def notify(self, *queue_ids: str) -> None:
        """New work may be ready in these queues (submit, requeue, retry), or anywhere when
        none is named (a capacity change): dispatch now."""
        if queue_ids:
            self.relay(queue_ids)
        self.hinted(queue_ids)

    def hinted(self, queue_ids: tuple[str, ...]) -> None:
        """`notify` without telling the other processes: what a peer's hint does here."""
        if queue_ids:
            self._hinted.update(queue_ids)
        else:
            self._every = True
        self._wake.set()

    def ended(self, attempt_id: str) -> None:
        """An attempt of this process ended: its slot is free. Dispatch now only if its
        connection may have left work waiting (see `Link.saturated`); otherwise the freed
        slot waits for the next notify or tick, and no empty lease transaction is run."""
        self.finished(attempt_id, "LOST")  # no-op when its end was observed already
        connection_id = self.owner.pop(attempt_id, None)
        link = self.links.get(connection_id) if connection_id else None
        if link is not None:
            link.in_flight.discard(attempt_id)
            if link.pending:
                self._wake.set()
            else:
                self._maybe_offer(link)

    def granted(self, grants: list[Grant]) -> None:
        """Leases were committed (a round or eager dispatch): count them, remember each
        attempt's task and handler, observe how long each task waited for its lease."""
        self.on_grants(len(grants))
        at = time.monotonic()
        for grant in grants:
            task = grant.task
            self.leased[grant.attempt_id] = Leased(task.id, task.handler, at)
            waited = (grant.leased_at - task.available_at).total_seconds()
            self.observer.lease_waited(task.handler, max(0.0, waited))

    def finished(self, attempt_id: str, outcome: str, error_code: str = "") -> None:
        """An attempt leased here ended with `outcome` (observed once; waiters woken)."""
        leased = self.leased.pop(attempt_id, None)
        if leased is not None:
            seconds = time.monotonic() - leased.at
            self.observer.attempt_ended(leased.handler, outcome, error_code, seconds)
            self.observer.task_changed(leased.task_id)

    def tell_cancel(self, attempt_id: str) -> None:
        """A cancel was committed for this attempt: push `cancel_requested` to its connection
        if it is here (the heartbeat acks repeat it anywhere, docs/orbit/task-control.md §3)."""
        connection_id = self.owner.get(attempt_id)
        link = self.links.get(connection_id) if connection_id else None
        if link is not None:
            cancel: dict[str, JsonValue] = {
                "type": "cancel",
                "attempt_id": attempt_id,
                "reason": "cancel_requested",
            }
            self.spawn(link.send(cancel))

    # ------------------------------------------------------------------ dispatcher
    async def _dispatch_forever(self) -> None:
        """Rounds on every wake; at least every tick a full round (`EVERY`), even while wakes
        keep coming: it finds what no notify names (ready by time, other processes' work)."""
        loop = asyncio.get_running_loop()
        full_at = loop.time()
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(full_at):  # no extra task per wait (wait_for)
                    await self._wake.wait()
            self._wake.clear()
            if loop.time() >= full_at:
                self._every, full_at = True, loop.time() + self.tick_s
                if self.offers is not None:  # claims whose datagram was lost
                    self.spawn(self._deliver_claimed(self.offers))
            if await self.dispatch_round(self._take_hints()):
                self._wake.set()  # a link still has free slots and pending queues

    def _take_hints(self) -> Hinted:
        hinted: Hinted = EVERY if self._every else frozenset(self._hinted)
        self._every = False
        self._hinted = set()
        return hinted

    async def dispatch_round(self, hinted: Hinted = EVERY) -> bool:
        """Ask each link with free slots on its candidate queues
        (`agentcall.orbit.domain.dispatch`); True when some link should be asked again at once."""
        offers = {link: link.offer() for link in self.links.values()}
        plans: list[tuple[Link, str, int]] = []
        for link, offer in sorted(offers.items(), key=lambda pair: -pair[1].free):
            if offer.free:
                plans.extend((link, queue_id, size) for queue_id, size in shares(offer, hinted))
                link.rotation += 1
        results = await _each(self._fill(*plan) for plan in plans)
        full: dict[Link, dict[str, bool]] = {link: {} for link in offers}
        for (link, queue_id, _), got_all in zip(plans, results, strict=True):
            full[link][queue_id] = got_all
        for link, offer in offers.items():
            link.pending = pending_after(offer, hinted, full[link])
            self._maybe_offer(link)
        return any(wants_more(link.offer()) for link in self.links.values())

    async def _fill(self, link: Link, queue_id: str, size: int) -> bool:
        # the link's only free slot is offered: the lease transaction withdraws the offer if
        # it finds a task (and leases nothing to this link if a claim came first)
        spare = self.offers.taking(link) if self.offers is not None else None
        offer_id = spare.offer_id if spare is not None else None
        ask = LeaseAsk(link.peer, link.handlers, queue_id, size, offer_id)
        try:
            grants: list[Grant] = await self.batcher.submit(LEASE, ask)
        finally:
            if spare is not None and self.offers is not None:
                self.offers.settled(link, spare, withdrawn=False)
        if spare is not None and grants and self.offers is not None:
            self.offers.settled(link, spare, withdrawn=True)
        for grant in grants:
            link.in_flight.add(grant.attempt_id)
            self.owner[grant.attempt_id] = link.peer.connection_id
        if grants:
            self.granted(grants)
        else:
            self.on_empty()
        if len(grants) == 1:  # a lone lease (an idle worker) leaves at once
            await quietly((link.urgent or link.send)(grants[0].message()))
        elif grants and link.send_many is not None:  # with batch framing: one frame
            await quietly(link.send_many([grant.message() for grant in grants]))
        elif grants:
            await asyncio.gather(*(quietly(link.send(grant.message())) for grant in grants))
        if grants and not link.open:  # closed while leasing: shorten these leases too
            await self.batcher.run(partial(self._disconnect, link.peer.connection_id))
        return len(grants) == size

    # ------------------------------------------------------------------ offers
    def _maybe_offer(self, link: Link) -> None:
        """An idle link with nothing left to ask: offer a slot to the other processes; a link
        whose worker lowered its capacity (`flow`) below its offered slot: take it back."""
        if self.offers is None:
            return
        offered = link.offered
        if offered is not None and offered.open and link.capacity <= link.held:
            self.spawn(self._take_back(self.offers, link))
        elif not link.pending and self.offers.wants(link):
            self.spawn(self._publish(self.offers, link))

    async def _publish(self, offers: Offering, link: Link) -> None:
        claimed = await offers.publish(link)
        if claimed is not None:
            await self._deliver(offers, claimed)
        elif link.pending and link.open:
            self._wake.set()  # hinted while the offer was being published

    async def _take_back(self, offers: Offering, link: Link) -> None:
        claimed = await offers.take_back(link)
        if claimed is not None:
            await self._deliver(offers, claimed)

    def claimed(self, offer_id: str) -> None:
        """Another process says it claimed this offer (`orbit.claim.1`): deliver the lease."""
        if self.offers is not None:
            self.spawn(self._deliver(self.offers, offer_id))

    async def _deliver_claimed(self, offers: Offering) -> None:
        for offer_id in await offers.claimed():
            await self._deliver(offers, offer_id)

    async def _deliver(self, offers: Offering, offer_id: str) -> None:
        """Send the lease a claim wrote on an offer of this process; a closed link's lease is
        shortened like any other of a closed connection."""
        found = await offers.delivery(offer_id)
        if found is None:
            return
        link, grant = found
        if not link.open:
            link.in_flight.discard(grant.attempt_id)
            await self.disconnect(link.peer.connection_id)
            return
        self.owner[grant.attempt_id] = link.peer.connection_id
        self.granted([grant])
        await quietly((link.urgent or link.send)(grant.message()))
        if not link.open:  # closed while sending
            await self.disconnect(link.peer.connection_id)

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
                    "type": "cancel",
                    "attempt_id": attempt_id,
                    "reason": reason,
                }
                self.spawn(link.send(cancel))
        if report.wake:
            self.notify(*report.wake)


async def _each(runs: Iterable[Awaitable[T]]) -> list[T]:
    """`asyncio.gather`, but a lone awaitable is awaited here: no task and no loop turn in
    between (the round an idle worker's lease waits for)."""
    pending = list(runs)
    if len(pending) == 1:
        return [await pending[0]]
    return list(await asyncio.gather(*pending))


async def quietly(sending: Awaitable[Any]) -> None:
    """A send to a connection that just closed is not an error: its leases expire (the
    connection's close is logged and counted where it is noticed)."""
    try:
        await sending
    except Exception as exc:  # noqa: BLE001
        log.debug("send to a closing worker connection dropped: %r", exc)
