"""Exchange, queue and routing-key names of MQ topology v3 (D-MQ-1, D-MQ-2).

The D never declares, binds or deletes any of them; it consumes and publishes only.
"""

from __future__ import annotations

COMMAND_EXCHANGE = "agent-call.dispatchers.v3"
RESULT_EXCHANGE = "agent-call.saas.v3"
DEAD_LETTER_EXCHANGE = "agent-call.dead-letter.v3"
MAX_TASK_QUEUES = 256


def task_queue(dispatcher_id: str, task_id: str) -> str:
    return f"agent-call.d.{dispatcher_id}.task.{task_id}.v3"


def control_queue(dispatcher_id: str) -> str:
    return f"agent-call.d.{dispatcher_id}.control.v3"


def result_routing_key(dispatcher_id: str) -> str:
    return f"d.{dispatcher_id}.out"


def result_queue(dispatcher_id: str) -> str:
    return f"agent-call.saas.d.{dispatcher_id}.v3"


def task_routing_key(dispatcher_id: str, task_id: str) -> str:
    return f"d.{dispatcher_id}.task.{task_id}.in"
