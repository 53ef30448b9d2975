"""Entry points of task control: the control queue, start-up recovery, discovery.

``handle(raw)`` validates one ``task.control`` delivery, persists it as a control job —
closing admission in the same commit for pause/stop — and only then lets the caller ACK
it (D-MQ-4); the job runs on the task's serial lane (D-CTL-1). A body that is not JSON,
breaks its schema or names another dispatcher is recorded redacted and dead-lettered
(D-MQ-5). ``recover()`` re-queues every unfinished job in delivery order and every
interrupted drain after a restart; ``after_discovery`` aligns consumers with barriers that
a discovery page tightened (closed, removed).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from enum import StrEnum
from typing import TypedDict

from agentcall.dispatcher import contracts
from agentcall.dispatcher.control.lanes import TaskLanes
from agentcall.dispatcher.control.ports import ControlStore
from agentcall.dispatcher.control.procedures import ControlProcessor
from agentcall.dispatcher.domain.control import (
    ActiveCallPolicy,
    ControlAction,
    ControlCommand,
    ControlJob,
)
from agentcall.dispatcher.domain.states import Barrier
from agentcall.dispatcher.logs import handled, log

LOG = logging.getLogger("dispatcher.control")


class ControlServiceStatus(TypedDict):
    received: int
    dead_lettered: int
    lanes: dict[str, dict[str, object]]
    drained: dict[str, int]


class ControlSettle(StrEnum):
    ACK = "ack"
    DEAD_LETTER = "dead_letter"


def parse_control(raw: bytes) -> ControlCommand:
    """A strict ``command-next.task_control`` body; raises :class:`contracts.ContractError`."""
    body = contracts.decode(contracts.Kind.TASK_CONTROL, raw)
    assert isinstance(body, dict)
    payload = body["payload"]
    policy = payload.get("active_call_policy")
    for field in ("issued_at", "not_after"):  # OverflowError beyond the datetime range
        datetime.fromisoformat(body[field]).astimezone(UTC)
    return ControlCommand(
        dispatcher_id=body["dispatcher_id"],
        tenant_id=body["tenant_id"],
        tenant_key=body["tenant_key"],
        trace_id=body["trace_id"],
        issued_at=datetime.fromisoformat(body["issued_at"]),
        not_after=datetime.fromisoformat(body["not_after"]),
        task_id=payload["task_id"],
        action=ControlAction(payload["action"]),
        active_call_policy=ActiveCallPolicy(policy) if policy else None,
        reason=payload["reason"],
    )


class ControlService:
    def __init__(
        self,
        store: ControlStore,
        processor: ControlProcessor,
        lanes: TaskLanes,
        *,
        dispatcher_id: str,
        clock: Callable[[], datetime],
        new_event_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self._store = store
        self._processor = processor
        self._lanes = lanes
        self._dispatcher_id = dispatcher_id
        self._clock = clock
        self._new_event_id = new_event_id
        self.received = 0
        self.dead_lettered = 0

    async def handle(self, raw: bytes, source: str = "mq:control") -> ControlSettle:
        """Persist one control delivery; the caller settles it as returned."""
        try:
            command = parse_control(raw)
        except contracts.ContractError as exc:
            reason = "invalid_json" if exc.keyword in ("json", "maxBytes") else "schema_violation"
            return await self._refuse(source, reason, str(exc), raw)
        except (ValueError, OverflowError) as exc:  # schema-valid, not a usable command
            detail = f"unusable value ({type(exc).__name__})"
            return await self._refuse(source, "schema_violation", detail, raw)
        except Exception as exc:  # the last line: no body may stop the control queue
            handled(LOG, "control.decode", exc, source=source)
            detail = f"decoding failed ({type(exc).__name__})"
            return await self._refuse(source, "undecodable", detail, raw)
        if command.dispatcher_id != self._dispatcher_id:
            return await self._refuse(
                source, "wrong_dispatcher", "dispatcher_id is not this D", raw
            )
        job = await self._store.receive(command, self._new_event_id(), self._clock())
        self.received += 1
        log(
            LOG,
            logging.INFO,
            "control.received",
            task_id=command.task_id,
            action=command.action.value,
            seq=job.seq,
            event_id=job.event_id,
        )
        self._schedule(job)
        return ControlSettle.ACK

    async def _refuse(self, source: str, reason: str, detail: str, raw: bytes) -> ControlSettle:
        await self._store.reject_input(source, reason, detail[:500], raw, self._clock())
        self.dead_lettered += 1
        log(LOG, logging.WARNING, "control.refused", source=source, reason=reason)
        return ControlSettle.DEAD_LETTER

    def _schedule(self, job: ControlJob) -> None:
        name = f"{job.command.action.value}#{job.seq}"
        self._lanes.submit(job.task_id, name, lambda: self._processor.run_job(job.seq))

    async def recover(self) -> int:
        """After a restart: unfinished jobs in delivery order, then interrupted drains."""
        jobs = await self._store.open_jobs()
        for job in jobs:
            self._schedule(job)
        busy = {job.task_id for job in jobs}
        for task_id, barrier in sorted((await self._store.barriers()).items()):
            if barrier is Barrier.STOPPED and task_id not in busy:
                if await self._store.drain_pending(task_id):
                    self._reconcile(task_id)
        return len(jobs)

    def after_discovery(self, task_ids: Iterable[str]) -> None:
        """Discovery persisted rows for these tasks: align consumers with their barriers."""
        for task_id in task_ids:
            self._reconcile(task_id)

    def _reconcile(self, task_id: str) -> None:
        self._lanes.submit(task_id, "reconcile", lambda: self._processor.reconcile(task_id))

    def status(self) -> ControlServiceStatus:
        return {
            "received": self.received,
            "dead_lettered": self.dead_lettered,
            "lanes": self._lanes.snapshot(),
            "drained": dict(self._processor.drained),
        }
