"""The lease choice of a flow-controlled queue (docs/orbit/flow-control.md). Pure: the
candidates (WAITING rows ready now), the queue's settings, what runs per concurrency key, the
token buckets and the fairness passes, all read in the lease transaction; `now` is the
database time.

Rules, in this order for each candidate taken:
- priority with ageing (`agentcall.orbit.domain.lease_order`): candidates go in lease order
  (readiness with a head start per step of priority); with fairness on, by competing rank
  (a task's rank less one for every ageing step it has waited), and within one competing rank
  round-robin over fairness keys by weight (stride scheduling: the key with the lowest pass
  goes next and its pass grows by STRIDE / weight), FIFO within a key;
- concurrency: a task whose key already runs its limit is not leased (CONCURRENCY_LIMIT);
- rate: a lease takes one token of its bucket (the queue's, or its key's); none left: not
  leased (RATE_LIMIT), and `wake_at` says when the next token is due."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from agentcall.orbit.domain.flow_settings import FlowSettings, RateLimit
from agentcall.orbit.domain.lease_order import competing_rank, lease_order

STRIDE = 1_000_000  # a key of weight w advances its pass by STRIDE // w per lease
QUEUE_BUCKET = ""  # the bucket key of a queue-wide rate limit
VIRTUAL_PASS = ""  # the passes' key of the queue's virtual time (fairness keys are never "")


class WaitingReason(enum.StrEnum):
    """Why a ready WAITING task of a flow-controlled queue was not leased."""

    CONCURRENCY_LIMIT = "concurrency_limit"
    RATE_LIMIT = "rate_limit"


@dataclass(frozen=True, slots=True)
class FlowCandidate:
    task_id: str
    priority: int
    available_at: datetime
    concurrency_key: str | None = None
    fairness_key: str | None = None
    fairness_weight: int = 1

    @property
    def lease_order(self) -> int:
        return lease_order(self.available_at, self.priority)


@dataclass(frozen=True, slots=True)
class Bucket:
    tokens: float
    refilled_at: datetime


@dataclass(frozen=True, slots=True)
class FlowState:
    """What the database says now: running tasks per concurrency key, the buckets (by
    bucket key, QUEUE_BUCKET for the queue's own), the fairness passes (by fairness key)."""

    running: Mapping[str, int] = field(default_factory=dict)
    buckets: Mapping[str, Bucket] = field(default_factory=dict)
    passes: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LeaseChoice:
    chosen: tuple[str, ...]  # task ids, in lease order
    refused: Mapping[WaitingReason, int]  # candidates passed over, by reason
    buckets: Mapping[str, Bucket]  # the buckets used, after this choice (to write back)
    passes: Mapping[str, int]  # the fairness passes changed by this choice (to write back)
    wake_at: datetime | None  # when a token is next due, if the rate refused a candidate
    blocked: frozenset[str]  # concurrency keys at their limit after this choice


def refill(bucket: Bucket | None, rate: RateLimit, now: datetime) -> Bucket:
    """Tokens added since the last refill at `per_second`, at most `burst`; a new bucket
    starts full. A clock that went back adds nothing."""
    if bucket is None:
        return Bucket(float(rate.burst), now)
    elapsed = max(0.0, (now - bucket.refilled_at).total_seconds())
    tokens = min(float(rate.burst), bucket.tokens + elapsed * rate.per_second)
    return Bucket(tokens, max(now, bucket.refilled_at))


def token_due(bucket: Bucket, rate: RateLimit) -> datetime:
    """When the bucket holds one whole token."""
    missing = max(0.0, 1.0 - bucket.tokens)
    return bucket.refilled_at + timedelta(seconds=missing / rate.per_second)


def bucket_key(settings: FlowSettings, candidate: FlowCandidate) -> str:
    rate = settings.rate
    if rate is not None and rate.per_key and candidate.concurrency_key is not None:
        return candidate.concurrency_key
    return QUEUE_BUCKET


def choose(
    candidates: Sequence[FlowCandidate],
    settings: FlowSettings,
    state: FlowState,
    now: datetime,
    slots: int,
) -> LeaseChoice:
    """Up to `slots` candidates to lease now, under every rule of `settings`."""
    run = _Round(settings, state, now)
    for level in _levels(candidates, now, fair=settings.fairness):
        ordered, run.floor = _order(level, settings, run.passes)
        for candidate in ordered:
            if len(run.chosen) >= slots or run.queue_dry:
                break
            run.take(candidate)
    return run.result()


def _levels(
    candidates: Sequence[FlowCandidate], now: datetime, *, fair: bool
) -> list[list[FlowCandidate]]:
    """The candidates in lease order: one level, or (`fair`) one level per competing rank,
    the lowest first, each in lease order."""
    ordered = sorted(candidates, key=lambda c: (c.lease_order, c.task_id))
    if not fair:
        return [ordered]
    by_rank: dict[int, list[FlowCandidate]] = {}
    for candidate in ordered:
        by_rank.setdefault(competing_rank(candidate.lease_order, now), []).append(candidate)
    return [by_rank[rank] for rank in sorted(by_rank)]


def _order(
    level: list[FlowCandidate], settings: FlowSettings, passes: dict[str, int]
) -> tuple[list[FlowCandidate], int]:
    """One competing rank in the order it is offered (FIFO, or by fairness pass as if each
    candidate were leased) and the floor pass, the queue's virtual time (the pass at which the
    last lease was taken): a new key, or one whose pass fell behind while it had nothing
    waiting, starts there (no burst for a key that was idle)."""
    if not settings.fairness:
        return level, 0
    lanes: dict[str | None, list[FlowCandidate]] = {}
    for candidate in level:
        lanes.setdefault(candidate.fairness_key, []).append(candidate)
    floor = passes.get(VIRTUAL_PASS, 0)
    at = {k: max(passes.get(k, floor), floor) if k is not None else floor for k in lanes}
    ordered: list[FlowCandidate] = []
    heads = {k: 0 for k in lanes}
    while heads:
        key = min(heads, key=lambda k: (at[k], lanes[k][heads[k]].lease_order, k or ""))
        candidate = lanes[key][heads[key]]
        ordered.append(candidate)
        at[key] += STRIDE // max(1, candidate.fairness_weight)
        heads[key] += 1
        if heads[key] == len(lanes[key]):
            del heads[key]
    return ordered, floor


@dataclass(slots=True)
class _Round:
    settings: FlowSettings
    state: FlowState
    now: datetime
    chosen: list[str] = field(default_factory=list)
    running: dict[str, int] = field(default_factory=dict)
    buckets: dict[str, Bucket] = field(default_factory=dict)
    passes: dict[str, int] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)
    refused: dict[WaitingReason, int] = field(default_factory=dict)
    wake_at: datetime | None = None
    floor: int = 0  # the fairness floor of the level being dealt
    queue_dry: bool = False  # the queue-wide bucket is empty: nothing more this round

    def __post_init__(self) -> None:
        self.running = dict(self.state.running)
        self.passes = dict(self.state.passes)

    def take(self, candidate: FlowCandidate) -> None:
        reason = self._refusal(candidate)
        if reason is not None:
            self.refused[reason] = self.refused.get(reason, 0) + 1
            return
        self.chosen.append(candidate.task_id)
        key = candidate.concurrency_key
        if key is not None:
            self.running[key] = self.running.get(key, 0) + 1
        if self.settings.rate is not None:
            name = bucket_key(self.settings, candidate)
            self.buckets[name] = replace(self.buckets[name], tokens=self.buckets[name].tokens - 1)
        if self.settings.fairness and candidate.fairness_key is not None:
            self._advance(candidate.fairness_key, candidate.fairness_weight)

    def _advance(self, key: str, weight: int) -> None:
        start = max(self.passes.get(key, self.floor), self.floor)
        self.passes[key] = self.changed[key] = start + STRIDE // max(1, weight)
        virtual = max(self.passes.get(VIRTUAL_PASS, 0), start)
        self.passes[VIRTUAL_PASS] = self.changed[VIRTUAL_PASS] = virtual

    def _refusal(self, candidate: FlowCandidate) -> WaitingReason | None:
        limit = self.settings.limit_for(candidate.concurrency_key)
        if limit is not None and candidate.concurrency_key is not None:
            if self.running.get(candidate.concurrency_key, 0) >= limit:
                return WaitingReason.CONCURRENCY_LIMIT
        rate = self.settings.rate
        if rate is None:
            return None
        name = bucket_key(self.settings, candidate)
        if name not in self.buckets:
            self.buckets[name] = refill(self.state.buckets.get(name), rate, self.now)
        bucket = self.buckets[name]
        if bucket.tokens >= 1.0:
            return None
        due = token_due(bucket, rate)
        self.wake_at = due if self.wake_at is None else min(self.wake_at, due)
        self.queue_dry = name == QUEUE_BUCKET
        return WaitingReason.RATE_LIMIT

    def result(self) -> LeaseChoice:
        blocked = frozenset(
            key
            for key, count in self.running.items()
            if (limit := self.settings.limit_for(key)) is not None and count >= limit
        )
        return LeaseChoice(
            tuple(self.chosen),
            dict(self.refused),
            dict(self.buckets),
            dict(self.changed),
            self.wake_at,
            blocked,
        )
