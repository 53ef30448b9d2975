"""Which queues get their own series in the per-queue metrics, and what the others add up to.

Queue names come from tenants, so a label per queue could grow without bound. At most
`limit` queues keep their own `(namespace, queue)` labels, and a queue keeps its labels once
it has them (for the life of the server process), so its counters never jump between series.
Free places go to the new queues that matter most: the oldest ready task first (what the
queue-age alert looks at), then the most ready tasks, then the most tasks, then by name (equal
queues always rank alike). Every other queue is folded into one series labelled `_other`
(namespace and queue): counts added, the oldest ready age the largest of them. A real queue
named `_other` in a namespace named `_other`, or one whose name is not known yet, is folded
there too. A scrape therefore has at most `limit + 1` series per metric and state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

OTHER = "_other"
DEFAULT_LIMIT = 50

Key = tuple[str, str]  # (namespace, queue)


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """One queue as the metrics show it, at one instant."""

    namespace: str
    queue: str
    counts: Mapping[str, int] = field(default_factory=dict)  # state -> tasks
    ready: int = 0  # WAITING tasks available now
    scheduled: int = 0  # WAITING tasks available only later
    oldest_ready_age_s: float = 0.0  # 0 when nothing is ready

    @property
    def key(self) -> Key:
        return (self.namespace, self.queue)


@dataclass(frozen=True, slots=True)
class Series:
    """The series of one scrape and the queues that hold their own labels from now on."""

    queues: list[QueueFigures]
    kept: frozenset[Key]


def _rank(q: QueueFigures) -> tuple[float, int, int, str, str]:
    return (-q.oldest_ready_age_s, -q.ready, -sum(q.counts.values()), q.namespace, q.queue)


def _labelled(q: QueueFigures) -> bool:
    return bool(q.namespace and q.queue) and q.key != (OTHER, OTHER)


def bounded(
    queues: Sequence[QueueFigures], kept: frozenset[Key], limit: int = DEFAULT_LIMIT
) -> Series:
    """The series for `queues`, given the queues that `kept` their labels so far."""
    places = max(0, limit) - len(kept)
    own: list[QueueFigures] = []
    rest: list[QueueFigures] = []
    for q in sorted(queues, key=_rank):
        if q.key in kept and _labelled(q):
            own.append(q)
        elif places > 0 and _labelled(q):
            own.append(q)
            places -= 1
        else:
            rest.append(q)
    now_kept = kept | {q.key for q in own}
    if not rest:
        return Series(own, now_kept)
    return Series([*own, _fold(rest)], now_kept)


def _fold(rest: Sequence[QueueFigures]) -> QueueFigures:
    counts: dict[str, int] = {}
    for q in rest:
        for state, n in q.counts.items():
            counts[state] = counts.get(state, 0) + n
    return QueueFigures(
        OTHER,
        OTHER,
        counts,
        sum(q.ready for q in rest),
        sum(q.scheduled for q in rest),
        max(q.oldest_ready_age_s for q in rest),
    )
