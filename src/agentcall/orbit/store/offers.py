"""`orbit_worker_offers` (agentcall.orbit.domain.offers, docs/orbit/scaling.md "Remote eager
dispatch"): the idle worker slots a server process offers to the others. The offering process
inserts an offer, takes it back (`withdraw`: one row when nobody claimed it), reads the claims made
on it and deletes the offers it delivered; a submit's transaction on any process locks open offers
of a queue (`open_offers`, SKIP LOCKED) and claims one (`claim`). Statements are the named
ones of `queries.sql`, run inside the caller's transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.offers import OfferTerms
from agentcall.orbit.domain.task import Task
from agentcall.orbit.store import connector
from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.sql import Insert, Update
from agentcall.orbit.store.tables import orbit_worker_offers
from agentcall.orbit.store.tasks import row_task

MAX_LOOKED = 16  # open offers locked per queue and look (a group takes at most that many)


class Worker(NamedTuple):
    """The worker identity columns of an attempt (protocol's `WorkerIdentity`, field by field)."""

    name: str
    instance_id: str
    sdk: str | None
    host: str | None
    pid: int | None


@dataclass(frozen=True, slots=True)
class OfferRow:
    """An open offer as a claiming transaction read it: its terms, and what the attempt row
    of a claim needs (the connection's identity, the attempt id and its token's digest)."""

    terms: OfferTerms
    connection_id: str
    token_id: str
    worker: Worker
    attempt_id: str
    lease_token_sha256: str


@dataclass(frozen=True, slots=True)
class OfferedLease:
    """What a claim wrote for an offer's attempt: the task and the lease's times."""

    task: Task
    number: int
    state: str
    leased_at: datetime
    lease_expires_at: datetime
    attempt_deadline_at: datetime
    lease_token_sha256: str


def offer_row(offer: OfferRow, now: datetime) -> dict[str, Any]:
    worker, terms = offer.worker, offer.terms
    return {
        "id": terms.offer_id,
        "server_id": terms.server_id,
        "connection_id": offer.connection_id,
        "namespace_id": terms.namespace_id,
        "token_id": offer.token_id,
        "worker_name": worker.name,
        "worker_instance_id": worker.instance_id,
        "worker_sdk": worker.sdk,
        "worker_host": worker.host,
        "worker_pid": worker.pid,
        "queues": json.dumps(sorted(terms.queues)),
        "handlers": json.dumps(sorted([h.handler, h.handler_version] for h in terms.handlers)),
        "attempt_id": offer.attempt_id,
        "lease_token_sha256": offer.lease_token_sha256,
        "created_at": now,
        "task_id": None,
        "claimed_at": None,
    }


async def publish(conn: HotConnection, offer: OfferRow, now: datetime) -> None:
    await connector.insert_all(conn, [Insert(orbit_worker_offers, [offer_row(offer, now)])])


async def withdraw(conn: HotConnection, offer_id: str) -> bool:
    """True: the slot is back (nobody claimed it); False: a submit claimed it."""
    return await connector.execute(conn, "withdraw_offer", {"offer_id": offer_id}) == 1


async def open_offers(conn: HotConnection, namespace_id: str, queue_id: str) -> list[OfferRow]:
    params = {"namespace_id": namespace_id, "queue_pattern": f'%"{queue_id}"%', "limit": MAX_LOOKED}
    return [_offer(row) for row in await connector.fetch(conn, "open_offers", params)]


def claims(claimed: Sequence[tuple[str, str]], now: datetime) -> Update:
    """The claims (offer id, task id) of offers this transaction locked (`open_offers`): one
    UPDATE, sent with the transaction's other writes (it cannot come up short)."""
    rows = [
        {"id": offer_id, "task_id": task_id, "claimed_at": now} for offer_id, task_id in claimed
    ]
    return Update(orbit_worker_offers, rows)


async def claimed(conn: HotConnection, server_id: str) -> list[tuple[str, str]]:
    """(offer id, task id) of this process's claimed offers."""
    rows = await connector.fetch(conn, "claimed_offers", {"server_id": server_id})
    return [(row.id, row.task_id) for row in rows]


async def drop(conn: HotConnection, offer_ids: Sequence[str]) -> None:
    if offer_ids:
        await connector.execute(conn, "drop_offers", {"ids": list(offer_ids)})


async def forget(conn: HotConnection, server_ids: Sequence[str]) -> None:
    if server_ids:
        await connector.execute(conn, "forget_servers_offers", {"server_ids": list(server_ids)})


async def offered_lease(
    conn: HotConnection, attempt_id: str, connection_id: str
) -> OfferedLease | None:
    params = {"attempt_id": attempt_id, "connection_id": connection_id}
    rows = await connector.fetch(conn, "offered_lease", params)
    if not rows:
        return None
    row = rows[0]
    return OfferedLease(
        row_task(row),
        int(row.a_number),
        row.a_state,
        row.a_leased_at,
        row.a_lease_expires_at,
        row.a_deadline_at,
        row.a_token_sha256,
    )


def _offer(row: Any) -> OfferRow:
    handlers = frozenset(HandlerKey(str(h), str(v)) for h, v in json.loads(row.handlers))
    terms = OfferTerms(
        row.id, row.server_id, row.namespace_id, frozenset(json.loads(row.queues)), handlers
    )
    pid = None if row.worker_pid is None else int(row.worker_pid)
    worker = Worker(row.worker_name, row.worker_instance_id, row.worker_sdk, row.worker_host, pid)
    return OfferRow(
        terms, row.connection_id, row.token_id, worker, row.attempt_id, row.lease_token_sha256
    )
