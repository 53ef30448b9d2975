"""Remote eager dispatch, the claiming side (docs/orbit/scaling.md "Remote eager dispatch",
`agentcall.orbit.domain.offers`): a submitted task that no connection of this process takes is
leased, inside the submit's own transaction, to a slot another server process offered. The claim
writes the same rows a lease round writes (the task LEASED revision 2, its attempt held by the
offering process's worker, the LEASED event), all at the transaction's database time, with the
attempt id and lease token digest the offer carries (the token itself never leaves the
offering process), and marks the offer claimed. After the commit the offering process is told
(`orbit.claim.1`) and delivers the lease; a lost datagram is covered by its periodic round.

No query is added to a submit while nobody offers: the process looks for offers on a queue
only while it believes some exist (`Belief`, fed by the other processes' `orbit.offer.1`), and
a look that finds none ends the belief."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.offers import Belief, Wanted, match_offers
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.transitions import Holder, LeaseWrite
from agentcall.orbit.execution.acks import Grant
from agentcall.orbit.execution.kernel import new_grant
from agentcall.orbit.store import offers as store
from agentcall.orbit.store.connector import HotConnection

# (server id, offer id, task id): tell the offering process after the commit
SendClaim = Callable[[str, str, str], None]


@dataclass(frozen=True, slots=True)
class RemoteGrant:
    """A task leased to another process's offered slot, in this transaction."""

    offer: store.OfferRow
    grant: Grant  # its lease token is not known here: the attempt row takes the offer's digest

    def lease(self) -> LeaseWrite:
        """The store's item: held by the offering connection, with the offer's token digest."""
        offer, grant, worker = self.offer, self.grant, self.offer.worker
        holder = Holder(
            offer.connection_id,
            offer.token_id,
            worker.name,
            worker.instance_id,
            worker.sdk,
            worker.host,
            worker.pid,
        )
        return LeaseWrite(
            grant.task,
            grant.attempt_id,
            grant.number,
            offer.lease_token_sha256,
            holder,
            grant.lease_expires_at,
            grant.attempt_deadline_at,
        )


class RemoteEager:
    """`dead()`: the server ids of processes known gone; `send(server, offer, task)`;
    `on_claimed(n)`: n offers were claimed by a committed submit (a metric)."""

    def __init__(
        self,
        lease_ttl_ms: int,
        dead: Callable[[], Collection[str]],
        send: SendClaim,
        on_claimed: Callable[[int], None] = lambda n: None,
        belief: Belief | None = None,
    ) -> None:
        self.lease_ttl_ms = lease_ttl_ms
        self.dead = dead
        self.send = send
        self.on_claimed = on_claimed
        self.belief = belief or Belief()

    def offered(self, queue_ids: Sequence[str]) -> None:
        """Another process offers slots on these queues (`orbit.offer.1`)."""
        self.belief.offered(queue_ids, time.monotonic())

    def wanted(self, tasks: Sequence[Task]) -> list[Task]:
        """The tasks worth a look: their queue is believed to have offers."""
        at = time.monotonic()
        return [task for task in tasks if self.belief.believes(task.queue_id, at)]

    async def claim(
        self, conn: HotConnection, tasks: Sequence[Task], now: datetime
    ) -> list[RemoteGrant]:
        """Lock the open offers of the tasks' queues and pick one per task that matches (ready
        tasks only: the caller filters), in the caller's transaction; the claims are written
        with its other writes (`claim_write`)."""
        by_id: dict[str, store.OfferRow] = {}  # an offer on several queues is found once
        for namespace_id, queue_id in sorted({(t.namespace_id, t.queue_id) for t in tasks}):
            rows = await store.open_offers(conn, namespace_id, queue_id)
            if not rows:
                self.belief.found_none([queue_id])
            for row in rows:
                by_id.setdefault(row.terms.offer_id, row)
        found = list(by_id.values())
        if not found:
            return []
        wanted = [
            Wanted(t.namespace_id, t.queue_id, HandlerKey(t.handler, t.handler_version))
            for t in tasks
        ]
        picks = match_offers(wanted, [row.terms for row in found], self.dead())
        claimed: list[RemoteGrant] = []
        for task, pick in zip(tasks, picks, strict=True):
            if pick is None:
                continue
            offer = found[pick]
            grant = replace(
                new_grant(task, 1, now, self.lease_ttl_ms),
                attempt_id=offer.attempt_id,
                lease_token="",
            )
            claimed.append(RemoteGrant(offer, grant))
        return claimed

    @staticmethod
    def claim_pairs(claimed: Sequence[RemoteGrant]) -> list[tuple[str, str]]:
        """(offer id, task id) of the claims, written with the transaction's last round trip."""
        return [(remote.offer.terms.offer_id, remote.grant.task.id) for remote in claimed]

    def deliver(self, claimed: Sequence[RemoteGrant]) -> None:
        """After the commit: tell each offering process which of its offers took which task."""
        for remote in claimed:
            terms = remote.offer.terms
            self.send(terms.server_id, terms.offer_id, remote.grant.task.id)
        if claimed:
            self.on_claimed(len(claimed))
