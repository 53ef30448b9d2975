"""Eager dispatch (worker-protocol.md §5 "Eager dispatch"): a submitted task that a connection
of this process can take at once is leased in its own submit transaction, so that an idle
worker gets it without a lease round (notify, lease transaction, durable commit) in between.
Temporal's eager activity dispatch makes the same trade for the same reason.

Which connection, and whether at all, is `agentcall.orbit.domain.dispatch.eager_seat` (an idle
connection with a free slot, queue and handler served, no older ready work pending in the
queue; one task per connection and transaction) plus the lease eligibility of
`agentcall.orbit.domain.leasing` (ready now, within its deadlines, attempts left). The submit group
(`agentcall.orbit.store.submit_group`) asks `claim(tasks, now)` inside its transaction, writes what
the claims add (the tasks as LEASED revision 2, their attempts, the LEASED events: the same rows
a lease round writes), and after the commit calls `deliver()`; if the transaction fails it
calls `release()`, which frees the reserved slots. A slot is reserved in this process at
claim time, so a dispatch round running meanwhile cannot hand it out twice.

A connection whose only free slot is offered to the other server processes (remote eager
dispatch, `agentcall.orbit.execution.offers`) still counts as idle here: `settle(conn)` takes the
offer back in the same transaction, and if another process claimed it first the task is not leased
here (it waits, and a round or the next submit finds it). Tasks that no connection here takes
may go to another process's offered slot (`agentcall.orbit.execution.remote_eager`), in `settle`
too.

The submit's receipt is still its acceptance snapshot (WAITING, revision 1: O-SUB-1); the task
itself is LEASED by the time the receipt is sent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from agentcall.orbit.domain.dispatch import Seat, eager_seat
from agentcall.orbit.domain.leasing import HandlerKey, LeaseCandidate, WorkerOffer, is_eligible
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.transitions import LeaseWrite
from agentcall.orbit.execution.acks import Grant
from agentcall.orbit.execution.flow import FlowControl
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.kernel import lease_write, new_grant
from agentcall.orbit.execution.links import Link, StandingOffer
from agentcall.orbit.execution.remote_eager import RemoteEager, RemoteGrant
from agentcall.orbit.store import offers
from agentcall.orbit.store.connector import HotConnection


@dataclass(slots=True)
class Claims:
    """The tasks of one submit transaction leased eagerly, and their connections."""

    hub: Hub
    now: datetime
    on_delivered: Callable[[int], None]
    grants: list[tuple[Link, Grant]] = field(default_factory=list)
    # grants that use a connection's offered slot: the offer is withdrawn in `settle`
    taking: dict[str, StandingOffer] = field(default_factory=dict)  # attempt id -> offer
    lost: list[str] = field(default_factory=list)  # offers claimed elsewhere first
    remote: list[RemoteGrant] = field(default_factory=list)
    remote_eager: RemoteEager | None = None
    told: bool = False  # the offering processes were told of `remote`
    unclaimed: list[Task] = field(default_factory=list)  # ready tasks no connection here took

    @property
    def task_ids(self) -> frozenset[str]:
        return frozenset(grant.task.id for grant in self._leases())

    def _leases(self) -> list[Grant]:
        """Every lease of the transaction: to connections here, then to offered slots."""
        return [grant for _, grant in self.grants] + [remote.grant for remote in self.remote]

    async def settle(self, conn: HotConnection) -> None:
        """In the transaction, before its writes: take offered slots back, claim other
        processes' offers for the tasks no connection here took."""
        for link, grant in list(self.grants):
            offer = self.taking.get(grant.attempt_id)
            if offer is not None and not await offers.withdraw(conn, offer.offer_id):
                self.lost.append(offer.offer_id)  # claimed elsewhere: its delivery comes
                self._drop(link, grant)
        if self.remote_eager is not None and self.unclaimed:
            self.remote = await self.remote_eager.claim(conn, self.unclaimed, self.now)

    def leases(self) -> list[LeaseWrite]:
        """Every lease of the transaction, to connections here, then to offered slots (their
        attempts take the offer's token digest)."""
        mine = [lease_write(grant, link.peer) for link, grant in self.grants]
        return mine + [remote.lease() for remote in self.remote]

    def offer_claims(self) -> list[tuple[str, str]]:
        """(offer id, task id) of the other processes' offers this transaction claims."""
        return RemoteEager.claim_pairs(self.remote)

    def committed(self) -> None:
        """The COMMIT just returned (the session is not even released): tell the processes
        whose offers were claimed at once; their workers wait for it."""
        if self.remote_eager is not None and not self.told:
            self.remote_eager.deliver(self.remote)
            self.told = True

    def deliver(self) -> None:
        """After the commit: send each lease (one frame per connection with batch framing)."""
        self.committed()
        self._settle_offers(withdrawn=True)
        for offer_id in self.lost:
            self.hub.claimed(offer_id)
        if not self.grants:
            return
        for link, grant in self.grants:
            self.hub.spawn((link.urgent or link.send)(grant.message()))
        self.hub.granted([grant for _, grant in self.grants])
        self.on_delivered(len(self.grants))
        for connection_id in {link.peer.connection_id for link, _ in self.grants if not link.open}:
            self.hub.spawn(self.hub.disconnect(connection_id))  # closed meanwhile: shorten

    def release(self) -> None:
        """The transaction failed: nothing was leased; free the reserved slots."""
        for link, grant in list(self.grants):
            self._drop(link, grant)
        self._settle_offers(withdrawn=False)
        self.remote.clear()

    def _drop(self, link: Link, grant: Grant) -> None:
        self.grants.remove((link, grant))
        link.in_flight.discard(grant.attempt_id)
        self.hub.owner.pop(grant.attempt_id, None)
        offer = self.taking.pop(grant.attempt_id, None)
        if offer is not None and self.hub.offers is not None and offer.offer_id not in self.lost:
            self.hub.offers.settled(link, offer, withdrawn=False)

    def _settle_offers(self, withdrawn: bool) -> None:
        desk = self.hub.offers
        if desk is not None:
            for link, grant in self.grants:
                offer = self.taking.pop(grant.attempt_id, None)
                if offer is not None:
                    desk.settled(link, offer, withdrawn)


class EagerDispatch:
    """`on_delivered(n)`: n eager leases were committed and sent (a metric). `remote`: the
    claiming side of remote eager dispatch, where several processes share the database."""

    def __init__(
        self,
        hub: Hub,
        lease_ttl_ms: int,
        on_delivered: Callable[[int], None] = lambda n: None,
        remote: RemoteEager | None = None,
        flow: FlowControl | None = None,
    ) -> None:
        self.hub = hub
        self.flow = flow  # the tasks of a queue with a limit wait for a lease round
        self.lease_ttl_ms = lease_ttl_ms
        self.on_delivered = on_delivered
        self.remote = remote

    def claim(self, accepted: Sequence[Task], now: datetime) -> Claims:
        """Reserve a slot for each task a connection can take now (see the module text)."""
        claims = Claims(self.hub, now, self.on_delivered, remote_eager=self.remote)
        if self.flow is not None and self.flow.keys:
            self.flow.submitted(accepted)  # a fair queue's new key joins the next round
        links = [link for link in self.hub.links.values() if link.open]
        if not links and self.remote is None:
            return claims  # nobody here, nobody elsewhere: nothing to evaluate
        seats = [
            Seat(link.offer().free, link.peer.queues, link.handlers, link.pending, idle=link.idle)
            for link in links
        ]
        elsewhere: list[Task] = []  # no seat here: maybe an offered slot of another process
        for task in accepted:
            if self.flow is not None and self.flow.limits(task.queue_id):
                continue  # the limits decide in the lease transaction
            key = HandlerKey(task.handler, task.handler_version)
            index = eager_seat(seats, task.queue_id, key) if seats else None
            if index is None:
                elsewhere.append(task)
                continue
            if not _ready(task, key, now):
                continue
            link = links[index]
            grant = new_grant(task, 1, now, self.lease_ttl_ms)
            offer = self.hub.offers.taking(link) if self.hub.offers is not None else None
            if offer is not None:
                claims.taking[grant.attempt_id] = offer
            link.in_flight.add(grant.attempt_id)
            self.hub.owner[grant.attempt_id] = link.peer.connection_id
            seats[index] = replace(seats[index], free=link.free, idle=False)
            claims.grants.append((link, grant))
        if self.remote is not None and elsewhere:
            # the belief first (a dict lookup), the eligibility only for what it lets through
            claims.unclaimed = [
                task
                for task in self.remote.wanted(elsewhere)
                if _ready(task, HandlerKey(task.handler, task.handler_version), now)
            ]
        return claims


def _ready(task: Task, key: HandlerKey, now: datetime) -> bool:
    """Leasable now, whoever serves it: WAITING, available, within deadlines, attempts left."""
    candidate = LeaseCandidate(
        task.state,
        task.queue_id,
        key,
        task.available_at,
        task.start_deadline_at,
        task.deadline_at,
        task.attempt_count,
        task.retry.max_attempts,
    )
    return is_eligible(candidate, WorkerOffer(frozenset({task.queue_id}), frozenset({key})), now)
