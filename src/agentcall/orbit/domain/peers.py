"""Cross-process wake-ups between the server processes of one database (docs/orbit/scaling.md):
which registrations are live, whom a hint goes to, and the hint datagram itself. Pure.

Every server process registers itself (id, the host:port where it hears hints, a heartbeat on
the database clock). When work becomes ready in a queue on one process (a submit, a requeue, a
retry) it sends the live others one small UDP datagram naming the queues, coalesced per event
loop turn; a receiver treats it exactly like a local notify. A hint is only an optimisation:
a lost one costs at most the dispatcher's periodic full round.

Datagrams, in ASCII (ids are 32 hex characters); anything else is ignored by the receiver:

- `orbit.hint.1 <queue_id> ...`: these queues got ready work here (look);
- `orbit.offer.1 <queue_id> ...`: an idle connection here offers a slot on these queues
  (remote eager dispatch, `agentcall.orbit.domain.offers`: a submit elsewhere may lease to it);
- `orbit.claim.1 <offer_id> <task_id>`: your offer was claimed for this task (deliver it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agentcall.orbit.domain.ids import is_id

MAGIC = b"orbit.hint.1"
OFFER_MAGIC = b"orbit.offer.1"
CLAIM_MAGIC = b"orbit.claim.1"
MAX_DATAGRAM = 1200  # below any path MTU: one hint never fragments
HEARTBEAT_S = 1.0  # how often a process renews its registration and re-reads its peers
EXPIRE_S = 5.0  # a registration not renewed for this long is not hinted (its process died)
FORGET_S = 60.0  # ... and deleted by the next live process after this long


@dataclass(frozen=True, slots=True)
class Registration:
    """One server process as its row says."""

    server_id: str
    host: str
    port: int
    heartbeat_at: datetime


def live_peers(
    rows: Iterable[Registration], me: str, now: datetime, expire_s: float = EXPIRE_S
) -> tuple[tuple[str, int], ...]:
    """The addresses to hint: every other registration renewed within `expire_s`, each
    address once (a restarted process may have left its old row), in a stable order."""
    return tuple(sorted(set(live_addresses(rows, me, now, expire_s).values())))


def forgotten(rows: Iterable[Registration], now: datetime, forget_s: float = FORGET_S) -> list[str]:
    """Registrations so old that their process is certainly gone: deleted."""
    cutoff = now - timedelta(seconds=forget_s)
    return sorted(row.server_id for row in rows if row.heartbeat_at < cutoff)


@dataclass(frozen=True, slots=True)
class Hint:
    """`orbit.hint.1`: ready work in these queues."""

    queue_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Offered:
    """`orbit.offer.1`: an idle connection of the sender offers a slot on these queues."""

    queue_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Claimed:
    """`orbit.claim.1`: the receiver's offer `offer_id` was claimed for `task_id`."""

    offer_id: str
    task_id: str


Message = Hint | Offered | Claimed


def encode(queue_ids: Iterable[str], magic: bytes = MAGIC) -> list[bytes]:
    """The datagrams naming `queue_ids` (valid ids only, each once, sorted), each at most
    MAX_DATAGRAM bytes; none for no queue. `magic`: a hint, or an offer (OFFER_MAGIC)."""
    ids = sorted({q for q in queue_ids if is_id(q)})
    datagrams: list[bytes] = []
    current = magic
    for queue_id in ids:
        part = b" " + queue_id.encode("ascii")
        if len(current) + len(part) > MAX_DATAGRAM:
            datagrams.append(current)
            current = magic
        current += part
    if current != magic:
        datagrams.append(current)
    return datagrams


def encode_claim(offer_id: str, task_id: str) -> bytes:
    if not (is_id(offer_id) and is_id(task_id)):
        raise ValueError("a claim names an offer id and a task id")
    return b" ".join((CLAIM_MAGIC, offer_id.encode("ascii"), task_id.encode("ascii")))


def decode(datagram: bytes) -> tuple[str, ...]:
    """The queue ids a hint names; () for anything that is not a valid hint."""
    message = decode_message(datagram)
    return message.queue_ids if isinstance(message, Hint) else ()


def decode_message(datagram: bytes) -> Message | None:
    """The message a datagram carries; None for anything that is not exactly one of the three
    kinds above (unknown magic or version, a bad id, a claim with other than two ids, too
    long, not ASCII)."""
    words = datagram.split(b" ")
    if len(datagram) > MAX_DATAGRAM or words[0] not in (MAGIC, OFFER_MAGIC, CLAIM_MAGIC):
        return None
    try:
        ids = tuple(word.decode("ascii") for word in words[1:])
    except UnicodeDecodeError:
        return None
    if not ids or not all(is_id(i) for i in ids):
        return None
    if words[0] == CLAIM_MAGIC:
        return Claimed(ids[0], ids[1]) if len(ids) == 2 else None
    return Hint(ids) if words[0] == MAGIC else Offered(ids)


def live_addresses(
    rows: Iterable[Registration], me: str, now: datetime, expire_s: float = EXPIRE_S
) -> dict[str, tuple[str, int]]:
    """Every other live registration's address by server id (where a claim is sent)."""
    cutoff = now - timedelta(seconds=expire_s)
    return {
        row.server_id: (row.host, row.port)
        for row in rows
        if row.server_id != me and row.heartbeat_at >= cutoff and 0 < row.port < 65536
    }


def dead_servers(
    rows: Iterable[Registration], now: datetime, expire_s: float = EXPIRE_S
) -> frozenset[str]:
    """Registrations not renewed within `expire_s`: their processes are gone (their offers are
    never claimed); a process registered since the last read is not among them."""
    cutoff = now - timedelta(seconds=expire_s)
    return frozenset(row.server_id for row in rows if row.heartbeat_at < cutoff)


def plan_sends(
    queue_ids: Sequence[str], peers: Sequence[tuple[str, int]], magic: bytes = MAGIC
) -> list[tuple[bytes, tuple[str, int]]]:
    """What one coalesced flush sends: every datagram to every live peer."""
    datagrams = encode(queue_ids, magic)
    return [(datagram, peer) for peer in peers for datagram in datagrams]
