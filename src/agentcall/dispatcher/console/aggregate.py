"""The console's figures, computed from plain rows (pure: no clock, no I/O).

Calls by outcome per 5-minute bucket over 6 hours, histograms with fixed edges, admission
decisions of the last hour, active calls against each limit, and discovery's lag.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

BUCKET = timedelta(minutes=5)
WINDOW = timedelta(hours=6)
HOUR = timedelta(hours=1)
OUTCOMES = ("answered", "no_answer", "busy", "rejected", "failed", "canceled")
DURATION_EDGES_S = (0.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)
LOSS_EDGES = (0.0, 0.001, 0.01, 0.02, 0.05, 0.1)
JITTER_EDGES_MS = (0.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Bucket:
    start: datetime
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class Bin:
    low: float
    high: float | None  # None: no upper edge
    count: int


def bucket_start(moment: datetime, size: timedelta = BUCKET) -> datetime:
    """The start of the ``size`` bucket holding ``moment`` (buckets aligned to the epoch)."""
    steps = (moment - _EPOCH) // size
    return _EPOCH + steps * size


def outcome_buckets(
    ends: Iterable[tuple[datetime, str, int]], now: datetime, window: timedelta = WINDOW
) -> list[Bucket]:
    """Calls ended per bucket and outcome, oldest first; the last bucket holds ``now``.
    ``ends``: (when, outcome, how many). Ends outside the window (or in the future) are left
    out; an unknown outcome counts as is."""
    last = bucket_start(now)
    count = window // BUCKET
    first = last - (count - 1) * BUCKET
    buckets = [Bucket(first + i * BUCKET) for i in range(count)]
    for ended_at, outcome, n in ends:
        index = (bucket_start(ended_at) - first) // BUCKET
        if 0 <= index < count:
            counts = buckets[index].counts
            counts[outcome] = counts.get(outcome, 0) + n
    return buckets


def histogram(values: Iterable[tuple[float, int]], edges: Sequence[float]) -> list[Bin]:
    """Counts of ``values`` ((value, how many)) in ``[edges[i], edges[i+1])``, the last bin
    open-ended; a value below the first edge counts in the first bin."""
    counts = [0] * len(edges)
    for value, n in values:
        index = 0
        for i, edge in enumerate(edges):
            if value >= edge:
                index = i
        counts[index] += n
    highs: list[float | None] = [*edges[1:], None]
    return [Bin(low, high, n) for low, high, n in zip(edges, highs, counts, strict=True)]


def admissions(rows: Iterable[tuple[str, str, str | None, int]]) -> dict[str, dict[str, int]]:
    """Decisions per task: ``accepted``, or the reason code of a rejection
    (``discarded_stopped`` for a command of a stopped task). Rows are (task_id, decision,
    reason_code, how many), those of the last hour (:data:`HOUR`)."""
    found: dict[str, Counter[str]] = {}
    for task_id, decision, reason, n in rows:
        key = reason if decision == "rejected" and reason else decision
        found.setdefault(task_id, Counter())[key] += n
    return {task: dict(sorted(counts.items())) for task, counts in sorted(found.items())}


@dataclass(frozen=True, slots=True)
class Usage:
    scope: str  # "tenant", "task" or "trunk"
    key: str
    active: int
    limit: int | None  # None: not known (config not read yet, or not set)

    @property
    def full(self) -> bool:
        return self.limit is not None and self.active >= self.limit

    @property
    def percent(self) -> int:
        if not self.limit:
            return 100 if self.active and self.limit == 0 else 0
        return min(100, round(100 * self.active / self.limit))


def usage(
    active: Mapping[str, Mapping[str, int]], limits: Mapping[str, Mapping[str, int | None]]
) -> list[Usage]:
    """Active calls against each limit, per scope (``tenants``, ``tasks``, ``trunks``): every
    key with a known limit or an active call."""
    rows = []
    for scope in ("tenants", "tasks", "trunks"):
        have, limit = active.get(scope, {}), limits.get(scope, {})
        for key in sorted(set(have) | set(limit)):
            rows.append(Usage(scope[:-1], key, have.get(key, 0), limit.get(key)))
    return rows


def lag_seconds(now: datetime, caught_up: bool, caught_up_at: datetime | None) -> float | None:
    """How long discovery has been behind: 0 when caught up, None when it never was."""
    if caught_up:
        return 0.0
    if caught_up_at is None:
        return None
    return max(0.0, (now - caught_up_at).total_seconds())


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def quality(figures: Iterable[tuple[Any, Any, int]]) -> dict[str, Any]:
    """Distribution of RTP loss ratio and jitter (ms) over the calls whose end carried
    ``quality.rtp`` figures (answered SIP calls). ``figures``: (loss_ratio, jitter_ms, how
    many), None (or anything not a number) where a call has no such figure."""
    losses: list[tuple[float, int]] = []
    jitters: list[tuple[float, int]] = []
    for loss, jitter, n in figures:
        if (value := _number(loss)) is not None:
            losses.append((value, n))
        if (value := _number(jitter)) is not None:
            jitters.append((value, n))
    return {
        "calls": max(sum(n for _, n in losses), sum(n for _, n in jitters)),
        "loss": histogram(losses, LOSS_EDGES),
        "jitter_ms": histogram(jitters, JITTER_EDGES_MS),
    }
