"""One batch of a bulk operation (docs/orbit/bulk.md), run by the engine's runner
(`agentcall.orbit.assembly.bulk_runner`) under its claim; and the claim itself.

A batch reads the operation, the token it acts as (again each batch: a revoked or narrowed
token stops it, FAILED) and the next `BATCH_SIZE` matched tasks with the revision each had
when matched. Each task gets the action's own use case (`cancel_task`, `retry_task`,
`resolve_task`) with that revision as `expected_revision` and the operation's idempotency key
(`bulk-<operation id>`), so a task that changed is refused and SKIPPED, and a batch run again
after a crash replays the receipts of the writes that committed instead of acting twice. The
outcomes, the progress and the renewed claim are then written in one transaction, on
condition that the claim is still this process's."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from agentcall.orbit.domain.bulk import (
    BulkAction,
    BulkOperation,
    BulkRequest,
    BulkState,
    Outcome,
    outcome_of,
)
from agentcall.orbit.domain.cancel import parse_cancel
from agentcall.orbit.domain.errors import OrbitError, PermissionDenied, Unauthenticated
from agentcall.orbit.domain.review import parse_resolve, parse_retry
from agentcall.orbit.domain.tokens import Principal, authenticate
from agentcall.orbit.store.bulk import Item
from agentcall.orbit.store.bulk_ports import BulkStore
from agentcall.orbit.store.ports import TaskStore
from agentcall.orbit.usecases.bulk_start import check_access
from agentcall.orbit.usecases.cancel import cancel_task
from agentcall.orbit.usecases.resolve import resolve_task
from agentcall.orbit.usecases.retry import retry_task
from agentcall.orbit.usecases.task_writes import Written


@dataclass(slots=True)
class Step:
    """What a batch did: whether the runner stops (finished, cancelled, claim lost), the
    queue whose tasks became WAITING (retry), the attempts whose workers are to be told
    (cancel of a running task) and the tasks that changed."""

    stop: bool
    queue_id: str | None = None
    woke: bool = False
    tell_worker: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


async def claim_next(bulks: BulkStore, server_id: str, claim_s: float) -> str | None:
    """Claim one running operation that no live process holds; None: none to run."""
    return await bulks.claim_next(server_id, claim_s)


async def release_claim(bulks: BulkStore, operation_id: str, server_id: str) -> None:
    await bulks.release(operation_id, server_id)


async def run_batch(
    bulks: BulkStore,
    store: TaskStore,
    operation_id: str,
    server_id: str,
    claim_s: float,
    parallel: int = 1,
) -> Step:
    read = await bulks.batch_input(operation_id)
    if read is None or read.operation.state is not BulkState.RUNNING:
        return Step(stop=True)
    op, items = read.operation, read.items
    try:
        principal = authenticate(read.token, datetime.now(UTC))
        check_access(principal, BulkRequest(op.filter, op.action, op.body))
    except (Unauthenticated, PermissionDenied) as exc:
        error = f"the token can no longer act: {exc.message}"
        await bulks.finish(op.id, BulkState.FAILED, error)
        return Step(stop=True)
    if not items:  # every matched task has an outcome already
        await bulks.finish(op.id, BulkState.SUCCEEDED, None)
        return Step(stop=True)
    step = Step(stop=False, queue_id=op.queue_id)
    acted = await _act_all(store, principal, op, items, step, parallel)
    progress = op.progress.add([item.outcome for item in acted if item.outcome is not None])
    if not await bulks.record_batch(op, server_id, acted, progress, claim_s):
        step.stop = True  # another process holds it now
    elif progress.complete:
        step.stop = True
    return step


async def _act_all(
    store: TaskStore,
    principal: Principal,
    op: BulkOperation,
    items: list[Item],
    step: Step,
    parallel: int,
) -> list[Item]:
    gate = asyncio.Semaphore(max(1, parallel))
    write = _writer(store, principal, op)

    async def one(item: Item) -> Item:
        async with gate:
            try:
                written = await write(item)
            except OrbitError as exc:
                outcome, message = outcome_of(exc)
                return Item(item.seq, item.task_id, item.revision, outcome, message)
        if not written.deduplicated:
            step.woke = step.woke or op.action is BulkAction.RETRY
            step.changed.append(item.task_id)
            if written.tell_worker is not None:
                step.tell_worker.append(written.tell_worker)
        return Item(item.seq, item.task_id, item.revision, Outcome.DONE)

    return list(await asyncio.gather(*(one(item) for item in items)))


def _writer(
    store: TaskStore, principal: Principal, op: BulkOperation
) -> Callable[[Item], Awaitable[Written]]:
    key, request_id = f"bulk-{op.id}", op.request_id

    async def write(item: Item) -> Written:
        body = {**op.body, "expected_revision": str(item.revision)}
        if op.action is BulkAction.CANCEL:
            cancel = parse_cancel(body)
            return await cancel_task(store, principal, item.task_id, cancel, key, request_id)
        if op.action is BulkAction.RETRY:
            retry = parse_retry(body)
            return await retry_task(store, principal, item.task_id, retry, key, request_id)
        resolve = parse_resolve(body)
        return await resolve_task(store, principal, item.task_id, resolve, key, request_id)

    return write
