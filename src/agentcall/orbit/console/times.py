"""How the console shows a time: relative to now ("3 min ago", "in 2 h"), with the absolute
UTC time on hover and in the `datetime` attribute. Pure: `now` is given."""

from __future__ import annotations

from datetime import datetime, timedelta

from markupsafe import Markup, escape

from agentcall.orbit.domain.times import format_time, parse_time


def span(seconds: int) -> str:
    """A duration in its largest sensible unit: 45 s, 12 min, 5 h, 3 d."""
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h" if seconds < 172_800 else f"{seconds // 86_400} d"


def relative(value: datetime, now: datetime) -> str:
    """`value` as seen from `now`: "just now" within a second, else "… ago" or "in …"."""
    seconds = int((now - value) / timedelta(seconds=1))
    if abs(seconds) < 1:
        return "just now"
    return f"{span(seconds)} ago" if seconds > 0 else f"in {span(-seconds)}"


def moment(value: datetime | str | None, now: datetime) -> Markup:
    """A `<time>` element: the relative time, the absolute one on hover; empty for None. A
    string is a time as the API writes it (a worker listing's)."""
    if value is None or value == "":
        return Markup("")
    when = parse_time(value, "time") if isinstance(value, str) else value
    absolute = format_time(when)
    return Markup('<time datetime="{0}" title="{0}">{1}</time>').format(
        escape(absolute), relative(when, now)
    )


def age(value: datetime | None, now: datetime) -> str:
    """How long ago `value` was (never negative), e.g. a backlog's age; empty for None."""
    if value is None:
        return ""
    return span(max(0, int((now - value) / timedelta(seconds=1))))
