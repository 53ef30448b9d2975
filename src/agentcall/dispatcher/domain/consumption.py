"""Which task queues the D consumes now (D-DISC-6, D-DISC-7, D-DISC-8, D-MQ-6)."""

from __future__ import annotations

from collections.abc import Iterable

from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import Barrier, TaskStatus

CONSUMING = frozenset({TaskStatus.RUNNING, TaskStatus.FINISHED})


def queues_to_consume(tasks: Iterable[LocalTask], gate_open: bool) -> set[str]:
    """Tasks whose queue is consumed: gate open, no barrier, status running or finished.

    A ``finished`` task is still consumed so that stray commands get an explicit
    ``task_not_running`` result; ``paused``/``stopped`` (discovered or as a barrier) and
    ``removed`` are not, so their backlog stays in the queue for the control or the SaaS.
    """
    if not gate_open:
        return set()
    return {t.task_id for t in tasks if t.barrier is Barrier.NONE and t.status in CONSUMING}
