"""Which task queues are consumed (D-DISC-6 gate, D-DISC-7 barriers, D-DISC-8 tombstone)."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.domain.consumption import queues_to_consume
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from tests.support.dispatcher_factories import local_task

ROWS = [
    ("running, no barrier", TaskStatus.RUNNING, Barrier.NONE, True, True),
    ("D-DISC-6 gate closed", TaskStatus.RUNNING, Barrier.NONE, False, False),
    ("finished still rejects strays", TaskStatus.FINISHED, Barrier.NONE, True, True),
    ("D-DISC-7 discovered paused keeps backlog", TaskStatus.PAUSED, Barrier.NONE, True, False),
    ("D-DISC-7 discovered stopped waits for stop", TaskStatus.STOPPED, Barrier.NONE, True, False),
    ("D-DISC-7 running never lifts paused", TaskStatus.RUNNING, Barrier.PAUSED, True, False),
    ("D-CTL-5 closed barrier", TaskStatus.RUNNING, Barrier.CLOSED, True, False),
    ("D-CTL-4 stopped barrier (drain elsewhere)", TaskStatus.RUNNING, Barrier.STOPPED, True, False),
    ("D-DISC-8 removed tombstone", TaskStatus.REMOVED, Barrier.REMOVED, True, False),
]


@pytest.mark.parametrize(
    ("name", "status", "barrier", "gate", "consumed"), ROWS, ids=[r[0] for r in ROWS]
)
def test_queues_to_consume(
    name: str, status: TaskStatus, barrier: Barrier, gate: bool, consumed: bool
) -> None:
    task = local_task(status=status, barrier=barrier)
    assert (task.task_id in queues_to_consume([task], gate)) is consumed
