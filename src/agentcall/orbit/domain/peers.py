"""Cross-process wake-ups between the server processes of one database (docs/orbit/scaling.md):
which registrations are live, whom a hint goes to, and the hint datagram itself. Pure.

Every server process registers itself (id, the host:port where it hears hints, a heartbeat on
the database clock). When work becomes ready in a queue on one process (a submit, a requeue, a
retry) it sends the live others one small UDP datagram naming the queues, coalesced per event
loop turn; a receiver treats it exactly like a local notify. A hint is only an optimisation:
a lost one costs at most the dispatcher's periodic full round.

Datagram: `orbit.hint.1 <queue_id> <queue_id> ...` in ASCII (queue ids are 32 hex characters);
anything else is ignored by the receiver."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agentcall.orbit.domain.ids import is_id

MAGIC = b"orbit.hint.1"
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
    cutoff = now - timedelta(seconds=expire_s)
    found = {(row.host, row.port) for row in rows
             if row.server_id != me and row.heartbeat_at >= cutoff and 0 < row.port < 65536}
    return tuple(sorted(found))


def forgotten(
    rows: Iterable[Registration], now: datetime, forget_s: float = FORGET_S
) -> list[str]:
    """Registrations so old that their process is certainly gone: deleted."""
    cutoff = now - timedelta(seconds=forget_s)
    return sorted(row.server_id for row in rows if row.heartbeat_at < cutoff)


def encode(queue_ids: Iterable[str]) -> list[bytes]:
    """The datagrams naming `queue_ids` (valid ids only, each once, sorted), each at most
    MAX_DATAGRAM bytes; none for no queue."""
    ids = sorted({q for q in queue_ids if is_id(q)})
    datagrams: list[bytes] = []
    current = MAGIC
    for queue_id in ids:
        part = b" " + queue_id.encode("ascii")
        if len(current) + len(part) > MAX_DATAGRAM:
            datagrams.append(current)
            current = MAGIC
        current += part
    if current != MAGIC:
        datagrams.append(current)
    return datagrams


def decode(datagram: bytes) -> tuple[str, ...]:
    """The queue ids a hint names; () for anything that is not a valid hint."""
    words = datagram.split(b" ")
    if len(datagram) > MAX_DATAGRAM or words[0] != MAGIC:
        return ()
    try:
        ids = tuple(word.decode("ascii") for word in words[1:])
    except UnicodeDecodeError:
        return ()
    return ids if ids and all(is_id(q) for q in ids) else ()


def plan_sends(
    queue_ids: Sequence[str], peers: Sequence[tuple[str, int]]
) -> list[tuple[bytes, tuple[str, int]]]:
    """What one coalesced flush sends: every datagram to every live peer."""
    datagrams = encode(queue_ids)
    return [(datagram, peer) for peer in peers for datagram in datagrams]
