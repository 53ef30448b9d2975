"""What the console's pages read (`agentcall.orbit.usecases.console_reads`), and how the throughput
chart and stored texts are shown."""

from __future__ import annotations

from datetime import UTC, datetime

from agentcall.orbit.console.chart import Chart, bars
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.usecases.console_reads import (
    PAGE,
    REVIEW_PAGE,
    Filter,
    QueuePage,
    TaskDetail,
    completions,
    queue_page,
    review_inbox,
    task_detail,
)
from agentcall.orbit.usecases.operations import Operations

__all__ = [
    "PAGE",
    "REVIEW_PAGE",
    "Filter",
    "QueuePage",
    "TaskDetail",
    "pretty",
    "queue_page",
    "review_inbox",
    "task_detail",
    "throughput",
]


async def throughput(ops: Operations, principal: Principal) -> Chart:
    now = datetime.now(UTC)
    return bars(await completions(ops, principal, now), now)


def pretty(text: str | None) -> str:
    """Stored JSON text as stored: numbers stay exactly as they were sent."""
    return "" if text is None else text
