"""The overview's throughput chart: tasks finished per minute over the last hour, as bars of
an inline SVG (pure: the page draws what `bars` computes)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

MINUTES = 60
WIDTH, HEIGHT = 600, 120
GOOD = frozenset({"SUCCEEDED"})


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str  # "ok" (SUCCEEDED) or "bad" (FAILED, CANCELLED)
    title: str


@dataclass(frozen=True, slots=True)
class Chart:
    bars: list[Bar]
    peak: int
    total_ok: int
    total_bad: int
    width: int = WIDTH
    height: int = HEIGHT


def minute_key(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def bars(rows: Iterable[tuple[str, str, int]], now: datetime) -> Chart:
    """`rows`: (minute 'YYYY-MM-DD HH:MM', state, count); the last MINUTES minutes up to
    `now`, oldest on the left; each minute a bar of successes with failures on top."""
    slots = [minute_key(now - timedelta(minutes=MINUTES - 1 - i)) for i in range(MINUTES)]
    index = {minute: i for i, minute in enumerate(slots)}
    ok, bad = [0] * MINUTES, [0] * MINUTES
    for minute, state, count in rows:
        i = index.get(minute)
        if i is not None:
            (ok if state in GOOD else bad)[i] += count
    peak = max([a + b for a, b in zip(ok, bad, strict=True)] + [0])
    scale = (HEIGHT - 10) / peak if peak else 0.0
    step = WIDTH / MINUTES
    drawn: list[Bar] = []
    for i, minute in enumerate(slots):
        x, width = round(i * step + 1, 2), round(step - 2, 2)
        ok_h, bad_h = ok[i] * scale, bad[i] * scale
        title = f"{minute} UTC: {ok[i]} succeeded, {bad[i]} failed or cancelled"
        if ok[i]:
            drawn.append(Bar(x, round(HEIGHT - ok_h, 2), width, round(ok_h, 2), "ok", title))
        if bad[i]:
            top = HEIGHT - ok_h - bad_h
            drawn.append(Bar(x, round(top, 2), width, round(bad_h, 2), "bad", title))
    return Chart(drawn, peak, sum(ok), sum(bad))
