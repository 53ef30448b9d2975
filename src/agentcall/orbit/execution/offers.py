"""Remote eager dispatch, the offering side (docs/orbit/scaling.md "Remote eager dispatch",
`agentcall.orbit.domain.offers`): this process offers one slot of each idle worker connection to the
other server processes, so that a submit there leases its task to that slot inside its own
transaction and this process only delivers the lease: no lease transaction and no second
durable commit on the way from a submit on A to an idle worker on B.

- **Publish** (`publish`): a link that is idle (nothing in flight), has a free slot and
  nothing to lease here gets an offer row naming its namespace, queues, handlers, worker
  identity and the attempt a claim will create (its id and its lease token's digest: only this
  process knows the token). The slot is reserved in the link (`StandingOffer`, the attempt id
  in `in_flight`) from then on: nothing here gives it out twice. The other processes hear
  `orbit.offer.1` (and again every registration round while it stands).
- **Withdraw**: when this process wants the slot itself (a submit here, a lease round, the
  connection closed), it deletes the unclaimed row in the transaction that uses the slot: one
  row, the slot is back; none, a submit elsewhere claimed it first, and the lease is delivered
  instead (`delivery`). A withdraw never leaves two holders: the row is the arbiter.
- **Deliver** (`delivery`): after a claim's commit the claiming process sends `orbit.claim.1`;
  this process reads the task and the attempt the claim wrote (a read, no commit), checks that
  the attempt is the offer's (its id, this connection, the token's digest) and hands the lease
  to the hub, which sends it. A lost datagram costs at most the hub's periodic round, which
  reads this process's claimed offers while any stands (`claimed`). Delivered rows are deleted
  with the next offer's INSERT (or by that round when no offer stands): no commit of their own
  right after a delivery.

If this process dies after a claim, nobody delivers that lease: it expires like any lease
never started (the task is requeued; never two live holders)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from agentcall.orbit.domain.attempts import AttemptState
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.lease_tokens import token_digest, token_is_current
from agentcall.orbit.domain.offers import OfferTerms
from agentcall.orbit.execution.acks import Grant
from agentcall.orbit.execution.links import Link, StandingOffer
from agentcall.orbit.store import offers as store
from agentcall.orbit.store.db import Database

log = logging.getLogger("orbit.offers")


@dataclass(frozen=True, slots=True)
class OfferCounters:
    """Metric hooks: offers published, withdrawn (the slot came back), delivered (leases that
    another process's submit granted here)."""

    published: Callable[[], None] = lambda: None
    withdrawn: Callable[[], None] = lambda: None
    delivered: Callable[[], None] = lambda: None


class OfferDesk:
    """`announce(queue_ids)`: tell the other processes that slots are offered on these queues;
    `live()`: the live other processes (offers are published only while there are some)."""

    def __init__(
        self,
        db: Database,
        server_id: str,
        announce: Callable[[Sequence[str]], None],
        live: Callable[[], Collection[str]],
        counters: OfferCounters | None = None,
    ) -> None:
        self.db = db
        self.server_id = server_id
        self.announce = announce
        self.live = live
        self.counters = counters or OfferCounters()
        self.standing: dict[str, Link] = {}  # offer id -> its link
        self._delivering: set[str] = set()
        self._dropping: set[str] = set()  # delivered offers whose rows are still there

    # ----------------------------------------------------------------- publish
    def wants(self, link: Link) -> bool:
        """An idle link with a free slot and no offer, while another process is there to
        claim it (alone, a process offers nothing and pays nothing)."""
        idle = link.open and link.offered is None and link.idle and link.free > 0
        return idle and bool(self.live())

    async def publish(self, link: Link) -> str | None:
        """Offer a slot of an idle link; an offer id when the link closed meanwhile and a claim
        came first (the caller delivers it: a lease of a closed connection)."""
        if not self.wants(link):
            return None
        offer = StandingOffer(new_id(), new_id(), new_id())
        link.offered = offer
        link.in_flight.add(offer.attempt_id)
        self.standing[offer.offer_id] = link
        try:
            await self.db.retrying(lambda: self._insert(link, offer))
        except Exception:  # noqa: BLE001 - an optimisation: the slot goes back
            log.warning("could not publish a worker offer; the slot stays local", exc_info=True)
            self._release(link, offer)
            return None
        self.counters.published()
        offer.open, offer.busy = True, False
        if not link.open:
            return await self.take_back(link)
        self.announce(link.queue_order)
        return None

    async def _insert(self, link: Link, offer: StandingOffer) -> None:
        dropping, self._dropping = sorted(self._dropping), set()
        try:
            async with self.db.hot_write() as conn:
                now = await self.db.now(conn)
                await store.drop(conn, dropping)
                await store.publish(conn, self.row(link, offer), now)
        except BaseException:
            self._dropping.update(dropping)
            raise

    def row(self, link: Link, offer: StandingOffer) -> store.OfferRow:
        peer, worker = link.peer, link.peer.worker
        terms = OfferTerms(
            offer.offer_id,
            self.server_id,
            peer.namespace_id,
            frozenset(link.queue_order),
            link.handlers,
        )
        identity = store.Worker(
            worker.name, worker.instance_id, worker.sdk, worker.host, worker.pid
        )
        return store.OfferRow(
            terms,
            peer.connection_id,
            peer.token_id,
            identity,
            offer.attempt_id,
            token_digest(offer.lease_token),
        )

    def offered_queues(self) -> set[str]:
        """The queues of the open offers (repeated to the other processes every round)."""
        return {
            queue
            for link in self.standing.values()
            if link.offered and link.offered.open
            for queue in link.queue_order
        }

    # ----------------------------------------------------------------- take back
    def taking(self, link: Link) -> StandingOffer | None:
        """Mark the link's spare offer busy for a transaction that will withdraw it."""
        offer = link.spare
        if offer is not None:
            offer.busy = True
        return offer

    def settled(self, link: Link, offer: StandingOffer, withdrawn: bool) -> None:
        """The transaction that took `offer` is over: `withdrawn` (committed), the slot is the
        link's again (its new lease holds it now); otherwise the offer stands or was claimed
        (then its delivery comes)."""
        if withdrawn:
            self.counters.withdrawn()
            self._release(link, offer)
        elif link.offered is offer:
            offer.busy = False

    async def take_back(self, link: Link) -> str | None:
        """Withdraw the link's offer on its own (the link closed, or its worker lowered its
        capacity so that no slot is left for it); the offer id when a claim came first (the
        caller delivers it: on a closed link that shortens the lease like any of a closed
        connection)."""
        offer = link.offered
        if offer is None or not offer.open or offer.busy:
            return None  # none, being published (`publish` comes back here) or taken
        offer.busy = True
        try:
            withdrawn = await self.db.retrying(lambda: self._withdraw(offer.offer_id))
        except Exception:  # noqa: BLE001 - an open link tries again at its next round
            log.warning("could not withdraw a worker offer", exc_info=True)
            withdrawn = not link.open  # a closed link's row stays; a claim on it expires
            if not withdrawn:
                self.settled(link, offer, False)
                return None
        if withdrawn:
            self.settled(link, offer, True)
            return None
        return offer.offer_id

    async def _withdraw(self, offer_id: str) -> bool:
        async with self.db.hot_write() as conn:
            return await store.withdraw(conn, offer_id)

    def _release(self, link: Link, offer: StandingOffer) -> None:
        link.in_flight.discard(offer.attempt_id)
        if link.offered is offer:
            link.offered = None
        self.standing.pop(offer.offer_id, None)

    # ----------------------------------------------------------------- deliver
    async def claimed(self) -> list[str]:
        """This process's offers that were claimed (the safety net's read); none, and no
        query, while no offer stands (then the rows of delivered offers are deleted, if any
        are left)."""
        if not self.standing:
            if self._dropping:
                await self._drop_now()
            return []
        async with self.db.single_read() as conn:
            found = await store.claimed(conn, self.server_id)
        return [offer_id for offer_id, _ in found if offer_id in self.standing]

    async def delivery(self, offer_id: str) -> tuple[Link, Grant] | None:
        """The lease a claim wrote on this offer, with its link (the slot is the lease's
        now); None when the offer is not this process's, not claimed, or being delivered."""
        link = self.standing.get(offer_id)
        offer = link.offered if link is not None else None
        if link is None or offer is None or offer.offer_id != offer_id:
            return None
        if offer_id in self._delivering:
            return None
        self._delivering.add(offer_id)
        try:
            lease = await self.db.retrying(lambda: self._read(link, offer))
        finally:
            self._delivering.discard(offer_id)
        if lease is None or not token_is_current(offer.lease_token, lease.lease_token_sha256):
            return None  # not claimed (a stale or forged datagram): the offer stands
        self.standing.pop(offer_id, None)
        link.offered = None  # the reserved attempt id in `in_flight` is the lease's now
        self._drop(offer_id)
        if not link.open:  # no next offer on this link to take the row with it
            await self._drop_now()
        if lease.state != AttemptState.LEASED.value:  # it ended meanwhile (expired, cancelled)
            link.in_flight.discard(offer.attempt_id)
            return None
        self.counters.delivered()
        grant = Grant(
            lease.task,
            offer.attempt_id,
            lease.number,
            offer.lease_token,
            lease.leased_at,
            lease.lease_expires_at,
            lease.attempt_deadline_at,
        )
        return link, grant

    async def _read(self, link: Link, offer: StandingOffer) -> store.OfferedLease | None:
        # on the hot path's driver connection (MySQL/MariaDB): one statement and a COMMIT
        # that has nothing to flush, a fraction of a pooled SQLAlchemy read's cost
        async with self.db.hot_write() as conn:
            return await store.offered_lease(conn, offer.attempt_id, link.peer.connection_id)

    def _drop(self, offer_id: str) -> None:
        """Delete a delivered offer's row later: with the next offer's INSERT (no commit of its
        own right after a delivery, while the worker starts), or by the periodic round."""
        self._dropping.add(offer_id)

    async def _drop_now(self) -> None:
        ids, self._dropping = sorted(self._dropping), set()
        try:
            async with self.db.hot_write() as conn:
                await store.drop(conn, ids)
        except Exception:  # noqa: BLE001 - claimed rows left are deleted at the stop
            log.warning("could not delete delivered offers", exc_info=True)

    async def stop(self) -> None:
        """A clean stop: every offer of this process is deleted (claims on them expire)."""
        try:
            async with self.db.write() as conn:
                await store.forget(conn, [self.server_id])
        except Exception:  # noqa: BLE001
            log.warning("could not delete this server's offers", exc_info=True)
