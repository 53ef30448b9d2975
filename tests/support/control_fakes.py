"""Small fakes behind the task-control ports (``agentcall.dispatcher.control.ports``).

Every fake appends to one shared ``events`` list so tests can assert the order of
effects (barrier persisted → read → consumer → hangup → drain → receipt).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from agentcall.dispatcher.control.lanes import TaskLanes
from agentcall.dispatcher.control.ports import (
    Choose,
    DrainReport,
    Progress,
)
from agentcall.dispatcher.control.procedures import ControlProcessor
from agentcall.dispatcher.control.service import ControlService
from agentcall.dispatcher.domain.control import (
    ActiveCallPolicy,
    ControlAction,
    ControlCommand,
    ControlJob,
    JobPhase,
    ReadFailure,
    TaskFacts,
    close,
    move_barrier,
    move_phase,
)
from agentcall.dispatcher.domain.model import TaskConfig
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from tests.support import dispatcher_factories as f

D = "c046b893-8628-4589-ae50-619d049248a6"
NOW = datetime(2026, 9, 21, 0, 0, 10, tzinfo=UTC)


def command(
    action: str,
    task_id: str = "task-a",
    policy: str | None = "drain",
    *,
    expired: bool = False,
    future: bool = False,
    tenant: tuple[str, str] = ("tenant-a", "tenant-a"),
) -> ControlCommand:
    return ControlCommand(
        dispatcher_id=D,
        tenant_id=tenant[0],
        tenant_key=tenant[1],
        trace_id="trace-1",
        issued_at=NOW + timedelta(seconds=600 if future else -5),
        not_after=NOW + timedelta(seconds=0 if expired else 900),
        task_id=task_id,
        action=ControlAction(action),
        active_call_policy=None if action == "resume" else ActiveCallPolicy(policy or "drain"),
        reason="test",
    )


def config(
    status: str, task_id: str = "task-a", revision: int = 3, tenant: str = "tenant-a"
) -> TaskConfig:
    base = f.task_config()
    return dataclasses.replace(
        base,
        dispatcher_id=D,
        task_id=task_id,
        tenant_id=tenant,
        tenant_key=tenant,
        status=TaskStatus(status),
        task_revision=revision,
    )


@dataclass
class Task:
    barrier: Barrier
    tenant: tuple[str, str] = ("tenant-a", "tenant-a")
    status: TaskStatus = TaskStatus.RUNNING
    control_revision: int = 0
    seen_revision: int = 0  # the highest revision seen elsewhere (discovery, admission)


@dataclass
class FakeStore:
    events: list[str]
    tasks: dict[str, Task] = field(default_factory=dict)
    jobs: dict[int, ControlJob] = field(default_factory=dict)
    outbox: list[dict[str, object]] = field(default_factory=list)
    drains: dict[str, str] = field(default_factory=dict)
    drain_acked: dict[str, int] = field(default_factory=dict)
    rejected: list[tuple[str, str]] = field(default_factory=list)

    def _set(self, task_id: str, barrier: Barrier) -> None:
        task = self.tasks.get(task_id)
        if task is not None and move_barrier(task.barrier, barrier) is not task.barrier:
            task.barrier = barrier
            self.events.append(f"barrier:{barrier.value}")

    async def receive(self, cmd: ControlCommand, event_id: str, now: datetime) -> ControlJob:
        if cmd.action.closes_first and cmd.task_id in self.tasks:
            self._set(cmd.task_id, close(self.tasks[cmd.task_id].barrier))
        job = ControlJob(len(self.jobs) + 1, event_id, cmd, JobPhase.RECEIVED)
        self.jobs[job.seq] = job
        self.events.append(f"received:{cmd.action.value}")
        return job

    async def decide(self, job: ControlJob, choose: Choose, now: datetime) -> ControlJob:
        move_phase(self.jobs[job.seq].phase, JobPhase.DECIDED)
        task = self.tasks.get(job.task_id)
        facts = (
            TaskFacts(task.barrier, task.tenant, max(task.seen_revision, task.control_revision))
            if task
            else TaskFacts(Barrier.NONE, None)
        )
        verdict = choose(facts)
        if verdict.verified is not None and task is None:
            v = verdict.verified
            task = self.tasks[job.task_id] = Task(Barrier.NONE, (v.tenant_id, v.tenant_key))
        if verdict.verified is not None and task is not None:
            task.status = verdict.verified.status
            task.control_revision = verdict.verified.task_revision
        if task is not None:
            self._set(job.task_id, verdict.decision.barrier)
        decided = dataclasses.replace(job, phase=JobPhase.DECIDED, decision=verdict.decision)
        self.jobs[job.seq] = decided
        return decided

    async def complete(self, job: ControlJob, body: dict[str, object], now: datetime) -> None:
        move_phase(self.jobs[job.seq].phase, JobPhase.DONE)
        self.jobs[job.seq] = dataclasses.replace(self.jobs[job.seq], phase=JobPhase.DONE)
        self.outbox.append(body)
        payload = body["payload"]
        assert isinstance(payload, dict)
        self.events.append(f"receipt:{payload['status']}:{payload['task_state']}")

    async def job(self, seq: int) -> ControlJob:
        return self.jobs[seq]

    async def open_jobs(self) -> list[ControlJob]:
        return [j for _, j in sorted(self.jobs.items()) if j.phase is not JobPhase.DONE]

    async def barrier(self, task_id: str) -> Barrier | None:
        task = self.tasks.get(task_id)
        return task.barrier if task else None

    async def barriers(self) -> dict[str, Barrier]:
        return {t: task.barrier for t, task in self.tasks.items()}

    async def drain_pending(self, task_id: str) -> bool:
        return self.drains.get(task_id) != "drained"

    async def start_drain(self, task_id: str, now: datetime) -> None:
        self.drains[task_id] = "draining"

    async def note_drain(self, task_id: str, acked: int, now: datetime) -> None:
        self.drain_acked[task_id] = acked

    async def finish_drain(self, task_id: str, now: datetime) -> None:
        self.drains[task_id] = "drained"

    async def reject_input(
        self, source: str, reason: str, detail: str, raw: bytes, now: datetime
    ) -> None:
        self.rejected.append((source, reason))


@dataclass
class FakeReader:
    events: list[str]
    answers: dict[str, list[TaskConfig | ReadFailure]] = field(default_factory=dict)
    forgotten: list[str] = field(default_factory=list)

    def script(self, task_id: str, *answers: TaskConfig | ReadFailure) -> None:
        self.answers.setdefault(task_id, []).extend(answers)

    async def read_fresh(self, task_id: str) -> TaskConfig | ReadFailure:
        queue = self.answers.get(task_id) or [ReadFailure.UNAVAILABLE]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        shown = answer.status.value if isinstance(answer, TaskConfig) else answer.value
        self.events.append(f"read:{shown}")
        return answer

    def forget(self, task_id: str) -> None:
        self.forgotten.append(task_id)
        self.events.append("forget")


@dataclass
class FakeConsumers:
    events: list[str]

    async def suspend(self, task_id: str) -> None:
        self.events.append("suspend")

    async def reopen(self, task_id: str) -> None:
        self.events.append("reopen")


@dataclass
class FakeDrainer:
    events: list[str]
    backlog: int = 10
    fail_times: int = 0
    hold: asyncio.Event | None = None

    async def drain(self, task_id: str, progress: Progress) -> DrainReport:
        self.events.append("drain")
        if self.hold is not None:
            await self.hold.wait()
        if self.fail_times:
            self.fail_times -= 1
            raise ConnectionError("broker link lost mid-drain")
        acked, self.backlog = self.backlog, 0
        await progress(acked)
        self.events.append(f"drained:{acked}")
        return DrainReport(acked)


@dataclass
class FakeCalls:
    events: list[str]

    async def hangup_task(self, task_id: str) -> int:
        self.events.append("hangup")
        return 2


@dataclass
class Rig:
    events: list[str]
    store: FakeStore
    reader: FakeReader
    consumers: FakeConsumers
    drainer: FakeDrainer
    calls: FakeCalls
    lanes: TaskLanes
    processor: ControlProcessor
    service: ControlService
    receipts_woken: list[int]


def rig(**tasks: Barrier) -> Rig:
    events: list[str] = []
    store = FakeStore(events, {t.replace("_", "-"): Task(b) for t, b in tasks.items()})
    reader, consumers = FakeReader(events), FakeConsumers(events)
    drainer, calls = FakeDrainer(events), FakeCalls(events)
    woken: list[int] = []
    processor = ControlProcessor(
        store,
        reader,
        consumers,
        drainer,
        calls,
        clock=lambda: NOW,
        on_receipt=lambda: woken.append(1),
    )
    lanes = TaskLanes(retry_s=0.001, retry_max_s=0.01)
    ids = iter(f"event-{n}" for n in range(1, 1000))
    service = ControlService(
        store, processor, lanes, dispatcher_id=D, clock=lambda: NOW, new_event_id=lambda: next(ids)
    )
    return Rig(events, store, reader, consumers, drainer, calls, lanes, processor, service, woken)


def raw(action: str, task_id: str = "task-a") -> bytes:
    payload: dict[str, object] = {"task_id": task_id, "action": action, "reason": "test"}
    if action != "resume":
        payload["active_call_policy"] = "drain"
    body = {
        "schema_version": "command-next.v0.1-proposal",
        "dispatcher_id": "c046b893-8628-4589-ae50-619d049248a6",
        "tenant_id": "tenant-a",
        "tenant_key": "tenant-a",
        "trace_id": "trace-1",
        "issued_at": "2026-09-21T00:00:00Z",
        "command_type": "task.control",
        "not_after": "2026-09-21T00:05:00Z",
        "payload": payload,
    }
    return json.dumps(body).encode()
