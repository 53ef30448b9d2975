"""Geometry of the console's inline SVG charts (pure: the templates draw what this computes).

Calls by outcome per 5-minute bucket as stacked bars (one colour per outcome, in a fixed
order), and a histogram's bins as plain bars. Every bar carries a title (shown on hover).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentcall.dispatcher.console.aggregate import OUTCOMES, Bin, Bucket

WIDTH, HEIGHT = 720, 140
BIN_WIDTH, BIN_HEIGHT = 320, 90
LABEL_WIDTH = 30  # an hour label this close to the right edge would be cut off


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str  # an outcome, or "bin"
    title: str


@dataclass(frozen=True, slots=True)
class Chart:
    bars: list[Bar]
    peak: int
    totals: dict[str, int]
    labels: list[tuple[float, str]]  # (x, text) under the axis
    width: int
    height: int

    @property
    def total(self) -> int:
        return sum(self.totals.values())


def _order(buckets: Sequence[Bucket]) -> list[str]:
    """The known outcomes first (in contract order), then any other, sorted."""
    seen = {outcome for b in buckets for outcome in b.counts}
    return [o for o in OUTCOMES if o in seen] + sorted(seen - set(OUTCOMES))


def outcomes_chart(buckets: Sequence[Bucket]) -> Chart:
    """One stacked bar per bucket, oldest on the left; a label every hour."""
    order = _order(buckets)
    peak = max([b.total for b in buckets] + [0])
    scale = (HEIGHT - 10) / peak if peak else 0.0
    step = WIDTH / max(1, len(buckets))
    bars: list[Bar] = []
    labels: list[tuple[float, str]] = []
    totals = dict.fromkeys(order, 0)
    for i, bucket in enumerate(buckets):
        x, top = round(i * step + 0.5, 2), float(HEIGHT)
        if bucket.start.minute == 0 and x <= WIDTH - LABEL_WIDTH:
            labels.append((x, bucket.start.strftime("%H:%M")))
        detail = ", ".join(f"{bucket.counts[o]} {o}" for o in order if bucket.counts.get(o))
        title = f"{bucket.start:%Y-%m-%d %H:%M} UTC: {detail or 'no calls'}"
        for outcome in order:
            n = bucket.counts.get(outcome, 0)
            if not n:
                continue
            totals[outcome] += n
            height = n * scale
            top -= height
            bars.append(Bar(x, round(top, 2), round(step - 1, 2), round(height, 2), outcome, title))
    return Chart(bars, peak, totals, labels, WIDTH, HEIGHT)


def _edge(value: float, unit: str) -> str:
    return f"{value:g}{unit}"


def bins_chart(bins: Sequence[Bin], unit: str = "") -> Chart:
    """One bar per bin, labelled by its lower edge."""
    peak = max([b.count for b in bins] + [0])
    scale = (BIN_HEIGHT - 8) / peak if peak else 0.0
    step = BIN_WIDTH / max(1, len(bins))
    bars: list[Bar] = []
    labels: list[tuple[float, str]] = []
    for i, item in enumerate(bins):
        x = round(i * step + 1, 2)
        high = f"< {_edge(item.high, unit)}" if item.high is not None else "and more"
        span = f"{_edge(item.low, unit)} {high}"
        labels.append((x, _edge(item.low, unit)))
        if item.count:
            height = round(item.count * scale, 2)
            y = round(BIN_HEIGHT - height, 2)
            bars.append(Bar(x, y, round(step - 2, 2), height, "bin", f"{span}: {item.count}"))
    return Chart(bars, peak, {"all": sum(b.count for b in bins)}, labels, BIN_WIDTH, BIN_HEIGHT)
