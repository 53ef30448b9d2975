"""What a flow-controlled queue is waiting for (docs/orbit/flow-control.md): why a ready
WAITING task is not leased (`waiting_reason`) and a queue's picture for the API, the console
and the metrics (`queue_status`: running per key, waiting by reason). Pure: derived from what
the lease choice itself reads (running tasks per concurrency key, the token buckets), never
stored, so reading it costs the common path nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from agentcall.orbit.domain.flow import QUEUE_BUCKET, Bucket, FlowState, WaitingReason, refill
from agentcall.orbit.domain.flow_settings import FlowSettings
from agentcall.orbit.domain.jsonvalue import JsonValue

TOP_KEYS = 20  # the concurrency keys shown (and exported as metrics) per queue, most running


def waiting_reason(
    settings: FlowSettings,
    concurrency_key: str | None,
    running: int,
    bucket: Bucket | None,
    now: datetime,
) -> WaitingReason | None:
    """Why a ready WAITING task with `concurrency_key` (its key running `running` tasks, its
    rate bucket as last written) is not leased now: its key at its limit, else no token left;
    None: nothing holds it but a free worker (or fairness, which only orders)."""
    limit = settings.limit_for(concurrency_key)
    if limit is not None and running >= limit:
        return WaitingReason.CONCURRENCY_LIMIT
    rate = settings.rate
    if rate is not None and bucket is not None and refill(bucket, rate, now).tokens < 1.0:
        return WaitingReason.RATE_LIMIT
    return None


def bucket_of(settings: FlowSettings, state: FlowState, key: str | None) -> Bucket | None:
    rate = settings.rate
    if rate is None:
        return None
    if rate.per_key and key is not None:
        return state.buckets.get(key)
    return state.buckets.get(QUEUE_BUCKET)


@dataclass(frozen=True, slots=True)
class KeyRunning:
    key: str
    running: int
    limit: int | None


@dataclass(frozen=True, slots=True)
class QueueStatus:
    running_keys: int  # concurrency keys with a running task
    top: tuple[KeyRunning, ...]  # the TOP_KEYS keys running most, most first
    waiting: Mapping[str, int] = field(default_factory=dict)  # ready WAITING by reason
    other_running: int = 0  # running tasks of the keys beyond `top`, added up


def queue_status(
    settings: FlowSettings,
    state: FlowState,
    waiting_by_key: Mapping[str | None, int],
    now: datetime,
    top: int = TOP_KEYS,
) -> QueueStatus:
    """Running per key (the `top` busiest) and the ready WAITING tasks by reason."""
    waiting = {reason.value: 0 for reason in WaitingReason}
    for key, count in waiting_by_key.items():
        running = state.running.get(key, 0) if key is not None else 0
        reason = waiting_reason(settings, key, running, bucket_of(settings, state, key), now)
        if reason is not None:
            waiting[reason.value] += count
    ranked = sorted(state.running.items(), key=lambda item: (-item[1], item[0]))
    keys = tuple(KeyRunning(key, n, settings.limit_for(key)) for key, n in ranked[:top])
    other = sum(n for _, n in ranked[top:])
    return QueueStatus(len(state.running), keys, waiting, other)


def status_view(status: QueueStatus) -> dict[str, JsonValue]:
    running: list[JsonValue] = []
    for item in status.top:
        entry: dict[str, JsonValue] = {"key": item.key, "running": item.running}
        if item.limit is not None:
            entry["limit"] = item.limit
        running.append(entry)
    return {
        "running_keys": status.running_keys,
        "running_by_key": running,
        "waiting_by_reason": dict(status.waiting),
    }
