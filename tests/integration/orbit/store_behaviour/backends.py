"""The Orbit operations the behaviour suite drives, over one store each: SQLite, MariaDB (a
fresh database per test) or the in-memory twin (`agentcall.orbit.store.memory`).

Every backend runs the same product code above the store (submit; the operator writes cancel,
retry and resolve through `TaskStore.operator_write`; the kernel's lease/start/finish,
upkeep's heartbeat and sweep); only the store under it differs. Time is
the store's clock: the SQL backends read the database clock and add the test's `advance`
offset (a step's `now`); the twin reads its injected clock, which `advance` moves.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.evidence import WorkerError
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.review import ResolveRequest, RetryRequest
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import parse_submit
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.domain.worker_errors import ProtocolError
from agentcall.orbit.execution.acks import Ack, Grant, Peer
from agentcall.orbit.execution.kernel import Kernel, KernelSettings
from agentcall.orbit.execution.upkeep import SweepReport
from agentcall.orbit.protocol.messages import (
    AttemptRef,
    Release,
    ReleaseReason,
    Result,
    ResultOutcome,
    WorkerIdentity,
)
from agentcall.orbit.store.ports import TaskStore
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.usecases.operations import Page
from agentcall.orbit.usecases.task_writes import Written

HANDLER = HandlerKey("demo.work", "v1")
# the server's defaults, which the suite's times are written against
SETTINGS = KernelSettings(lease_ttl_ms=15_000, reconnect_grace_ms=5_000)
WORKER = WorkerIdentity("behaviour", "b" * 32, "test", "localhost", 1)


@dataclass(frozen=True, slots=True)
class Event:
    """One task event as every store keeps it: what happened at which revision."""

    revision: int
    kind: str
    from_state: str | None
    to_state: str


class Backend(Protocol):
    """The operations of one Orbit over one store."""

    name: str
    task_store: TaskStore  # the store under the use cases

    async def tenant(self) -> Principal:
        """A new namespace with one queue, and a principal with every permission on it."""
        ...

    def advance(self, ms: int) -> None:
        """Move the store's clock forward (what the next step sees as `now`)."""
        ...

    async def now(self) -> datetime: ...

    async def submit(
        self, principal: Principal, body: dict[str, JsonValue], key: str
    ) -> Receipt: ...

    async def get(self, principal: Principal, task_id: str) -> Task: ...

    async def page(
        self,
        principal: Principal,
        state: TaskState | None,
        after: Position | None,
        limit: int,
    ) -> Page: ...

    async def cancel(
        self, principal: Principal, task_id: str, request: CancelRequest, key: str
    ) -> Written: ...

    async def retry(
        self, principal: Principal, task_id: str, request: RetryRequest, key: str
    ) -> Written: ...

    async def resolve(
        self, principal: Principal, task_id: str, request: ResolveRequest, key: str
    ) -> Written: ...

    async def evidence_keys(self, attempt_id: str) -> list[str]:
        """The keys of the attempt's evidence, in the order they were recorded."""
        ...

    async def lease(self, peer: Peer, limit: int) -> list[Grant]: ...

    async def start(self, peer: Peer, ref: AttemptRef) -> Ack: ...

    async def heartbeat(
        self, peer: Peer, refs: Sequence[AttemptRef]
    ) -> list[dict[str, JsonValue]]: ...

    async def finish(self, peer: Peer, result: Result) -> Ack: ...

    async def release(self, peer: Peer, ref: AttemptRef, reason: ReleaseReason) -> Ack:
        """The worker hands the attempt back (a refusal is an error ack)."""
        ...

    async def disconnect(self, peer: Peer) -> None: ...

    async def sweep(self) -> SweepReport: ...

    async def events(self, task_id: str) -> list[Event]: ...

    async def close(self) -> None: ...


def submit_body(principal: Principal, **fields: Any) -> dict[str, JsonValue]:
    """A valid submit to the principal's queue; `fields` override or add to it."""
    (queue_id,) = principal.queue_ids
    body: dict[str, Any] = {
        "queue_id": queue_id,
        "handler": HANDLER.handler,
        "handler_version": HANDLER.handler_version,
        "payload_version": "v1",
        "payload": {"n": 1},
    }
    body.update(fields)
    return body


def request_of(body: dict[str, JsonValue]) -> Any:
    """The validated request of a body, as the HTTP edge parses it (strict JSON)."""
    return parse_submit(read_json(json.dumps(body).encode()))


def worker_peer(principal: Principal) -> Peer:
    """A worker connection serving the principal's queues with the suite's handler."""
    return Peer(
        f"conn-{secrets.token_hex(4)}",
        principal.token_id,
        principal.namespace_id,
        principal.queue_ids,
        WORKER,
    )


def new_key() -> str:
    return f"key-{secrets.token_hex(6)}"


def later(at: datetime, ms: int) -> datetime:
    return at + timedelta(milliseconds=ms)


async def submitted(backend: Backend, principal: Principal, **fields: Any) -> str:
    """Submit a task with a fresh key; its id."""
    receipt = await backend.submit(principal, submit_body(principal, **fields), new_key())
    task_id = json.loads(receipt.task_text)["id"]
    assert isinstance(task_id, str)
    return task_id


def ref_of(grant: Grant) -> AttemptRef:
    return AttemptRef(grant.attempt_id, grant.lease_token)


def result_of(
    grant: Grant,
    outcome: ResultOutcome = ResultOutcome.SUCCEEDED,
    *,
    result_text: str | None = '{"ok":true}',
    error: WorkerError | None = None,
    lease_token: str | None = None,
) -> Result:
    """The worker's `result` message for the grant's attempt."""
    ref = AttemptRef(grant.attempt_id, lease_token or grant.lease_token)
    text = result_text if outcome is ResultOutcome.SUCCEEDED else None
    return Result(new_key(), ref, outcome, text, error, ())


async def released(
    kernel: Kernel, conn: Any, now: datetime, peer: Peer, ref: AttemptRef, reason: ReleaseReason
) -> Ack:
    """`Kernel.release` as the worker socket runs it: a protocol refusal is an error ack."""
    try:
        return await kernel.release(conn, now, peer, Release(new_key(), ref, reason))
    except ProtocolError as exc:
        return Ack.refused(exc, ref.attempt_id)
