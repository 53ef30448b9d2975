"""Example Orbit worker app: run it with

    ORBIT_URL=http://127.0.0.1:7470 ORBIT_TOKEN=... \\
        orbit worker --app examples.orbit_workers:registry --queue QUEUE_ID

Handlers (all version v1):

- `demo.noop`     async, returns {"ok": true} (benchmarks)
- `demo.work`     async, scripted by its payload (demo and tests):
                  {"sleep_ms": 0, "fast_from_attempt": n, "evidence": true, "echo": <JSON>,
                   "outcome": "succeed" | "retryable" | "fatal" | "review" | "crash",
                   "succeed_from_attempt": n}
                  (sleeps only on attempts before `fast_from_attempt` when that is given)
- `demo.sync`     the same script run as a *sync* handler (in the worker's thread pool)
- `demo.charge`   a RECONCILE_ONLY style side effect: records a payment reference as evidence
                  first, then "waits for the bank" for `sleep_ms` (the demo kills its worker here)
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

from agentcall.orbit.sdk.worker import Context, HandlerFailed, NeedsReview, Registry

registry = Registry()


@registry.handler("demo.noop", "v1")
async def noop(ctx: Context, payload: Any) -> Any:
    return {"ok": True}


def _script(ctx: Context, payload: dict[str, Any]) -> tuple[str, Any]:
    """What the scripted handlers do once their sleep is over."""
    outcome = str(payload.get("outcome", "succeed"))
    succeed_from = int(payload.get("succeed_from_attempt", 0))
    if succeed_from and ctx.attempt.number >= succeed_from:
        outcome = "succeed"
    if payload.get("evidence"):
        ctx.add_evidence(f"note-{ctx.attempt.number}", "note", data={"attempt": ctx.attempt.number})
    if outcome == "retryable":
        raise HandlerFailed("upstream_unavailable", "the upstream answered 503", retryable=True)
    if outcome == "fatal":
        raise HandlerFailed("bad_input", "the input cannot be processed", retryable=False)
    if outcome == "review":
        raise NeedsReview("ambiguous", "the upstream gave no definite answer")
    if outcome == "crash":
        raise RuntimeError("unexpected bug in the handler")
    return outcome, {
        "echo": payload.get("echo"),
        "attempt": ctx.attempt.number,
        "exact": Decimal("1.10"),
    }


def _sleep_ms(ctx: Context, payload: dict[str, Any]) -> int:
    fast_from = int(payload.get("fast_from_attempt", 0))
    if fast_from and ctx.attempt.number >= fast_from:
        return 0
    return int(payload.get("sleep_ms", 0))


@registry.handler("demo.work", "v1")
async def work(ctx: Context, payload: dict[str, Any]) -> Any:
    sleep_ms = _sleep_ms(ctx, payload)
    if sleep_ms:
        try:
            await asyncio.wait_for(ctx.cancel_token.wait(), sleep_ms / 1000)
        except TimeoutError:
            pass
        ctx.raise_if_cancelled()
    return _script(ctx, payload)[1]


@registry.handler("demo.sync", "v1")
def work_sync(ctx: Context, payload: dict[str, Any]) -> Any:
    sleep_ms = _sleep_ms(ctx, payload)
    if sleep_ms and ctx.cancel_token.wait_sync(sleep_ms / 1000):
        ctx.raise_if_cancelled()
    return _script(ctx, payload)[1]


@registry.handler("demo.charge", "v1")
async def charge(ctx: Context, payload: dict[str, Any]) -> Any:
    reference = f"pay-{ctx.task.task_id[:8]}-{ctx.attempt.number}"
    ctx.add_evidence(
        "payment",
        "reference",
        name="payment request sent",
        uri=f"https://bank.example/payments/{reference}",
    )
    try:  # waiting for the bank; a shutdown past the grace period stops the wait
        await asyncio.wait_for(ctx.cancel_token.wait(), int(payload.get("sleep_ms", 0)) / 1000)
    except TimeoutError:
        return {"payment": reference, "amount": payload.get("amount")}
    ctx.raise_if_cancelled()  # handed back: the payment's outcome is unknown → NEEDS_REVIEW
    return None
