"""Orbit's engine over the in-memory store twin (`agentcall.orbit.store.memory`), for the
unit tests of the engine and of the use cases: the product's `Kernel`, `Upkeep` and `Hub`,
bound to the twin's transactions instead of a SQL connection. The twin itself is product
code; this module only wires it.

`TwinBatcher` stands where the hub's batcher stands (its `run` and `submit`): each call is
one transaction of the twin, applied by the kernel's own batch handlers; it records the lease
asks it is given. `TwinOrbit` holds a twin with one namespace, named queues, a principal with
every permission on them, and a hub over it (not started)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import OPERATION, parse_submit, submit_digest
from agentcall.orbit.domain.tokens import ALL_PERMISSIONS, Principal, authenticate
from agentcall.orbit.execution.acks import Peer
from agentcall.orbit.execution.batch import Batcher, Kind
from agentcall.orbit.execution.hub import Hub, Link
from agentcall.orbit.execution.kernel import LEASE, Kernel, KernelSettings, handlers
from agentcall.orbit.execution.upkeep import Upkeep
from agentcall.orbit.protocol.messages import WorkerIdentity
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory import ManualClock, MemoryStore, MemoryWrites
from agentcall.orbit.store.ports import AttemptTransaction

T = TypeVar("T")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
HANDLER = HandlerKey("demo.work", "v1")
WORKER = WorkerIdentity("w", "i" * 32, "sdk", "host", 1)


def twin_bind(tx: Any) -> AttemptTransaction:
    """The kernel's view of its transaction (`Kernel(settings, bind)`): the twin's own."""
    assert isinstance(tx, MemoryWrites), f"not a transaction of the twin: {tx!r}"
    return tx


class TwinBatcher:
    def __init__(self, store: MemoryStore, kernel: Kernel) -> None:
        self.store = store
        self.handlers = {handler.kind: handler for handler in handlers(kernel)}
        self.asked: list[tuple[str, int]] = []  # (queue id, size) of every lease ask

    async def run(self, step: Callable[[Any, datetime], Awaitable[T]]) -> T:
        async with self.store.transaction() as (tx, now):
            return await step(tx, now)

    async def submit(self, kind: Kind[Any, T], item: Any) -> T:
        if kind is LEASE:
            self.asked.append((item.queue_id, item.size))
        async with self.store.transaction() as (tx, now):
            (outcome,) = await self.handlers[kind].apply(tx, now, [item])
        return cast(T, outcome)


@dataclass
class TwinOrbit:
    clock: ManualClock
    store: MemoryStore
    kernel: Kernel
    batcher: TwinBatcher
    hub: Hub
    principal: Principal
    queues: dict[str, str]  # name -> queue id
    sent: list[dict[str, Any]] = field(default_factory=list)  # to every link, in order

    def asked(self) -> list[tuple[str, int]]:
        """The lease asks so far, by queue name."""
        names = {queue_id: name for name, queue_id in self.queues.items()}
        return [(names[queue_id], size) for queue_id, size in self.batcher.asked]

    async def stock(self, name: str, count: int, **fields: Any) -> list[str]:
        """`count` tasks submitted to queue `name` (`fields` added to each body); their ids."""
        ids = []
        for _ in range(count):
            body = {
                "queue_id": self.queues[name],
                "handler": HANDLER.handler,
                "handler_version": HANDLER.handler_version,
                "payload_version": "v1",
                "payload": {},
                **fields,
            }
            request = parse_submit(read_json(json.dumps(body).encode()))
            scope = Scope(
                self.principal.namespace_id, OPERATION, "", f"k{len(self.store.state.tasks)}"
            )
            item = PendingSubmit(self.principal, request, scope, submit_digest(request), "r")
            ids.append(json.loads((await self.store.submit(item)).task_text)["id"])
        return ids

    def peer(self, names: tuple[str, ...], connection_id: str | None = None) -> Peer:
        queue_ids = frozenset(self.queues[name] for name in names)
        return Peer(
            connection_id or f"c{len(self.hub.links)}",
            self.principal.token_id,
            self.principal.namespace_id,
            queue_ids,
            WORKER,
        )

    def link(
        self, names: tuple[str, ...], capacity: int, held: frozenset[str] = frozenset()
    ) -> Link:
        """A worker connection serving these queues, added to the hub; what it is sent is
        appended to `sent`."""
        peer = self.peer(names)

        async def send(message: dict[str, Any]) -> None:
            self.sent.append(message)

        link = Link(
            peer, frozenset({HANDLER}), tuple(self.queues[n] for n in names), capacity, send
        )
        self.hub.add(link, set(held))
        return link


async def twin_orbit(
    queues: tuple[str, ...],
    *,
    tick_s: float = 3600,
    settings: KernelSettings | None = None,
) -> TwinOrbit:
    """A twin with these queues and the engine over it; the hub is not started."""
    clock = ManualClock(T0)
    store = MemoryStore(clock)
    first = await store.init("ns", "default", "secret-0")
    made = {name: await store.add_queue(first.namespace_id, name) for name in queues}
    token = await store.add_token(first.namespace_id, "secret-1", ALL_PERMISSIONS, made.values())
    settings = settings or KernelSettings()
    kernel = Kernel(settings, twin_bind)
    batcher = TwinBatcher(store, kernel)
    upkeep = Upkeep(settings, twin_bind)
    hub = Hub(cast(Batcher, batcher), kernel, upkeep, tick_s=tick_s, sweep_s=3600)
    return TwinOrbit(clock, store, kernel, batcher, hub, authenticate(token, T0), made)
