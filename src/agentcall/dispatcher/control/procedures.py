"""The pause / resume / stop / removed procedures, run on a task's serial lane.

A control processing (a :class:`~agentcall.dispatcher.domain.control.ControlJob`) moves through
persisted phases, so a restart continues where it stopped and its receipt keeps the
event_id fixed at reception (D-CTL-1):

``received``  admission already closed for pause/stop (same commit as the job, D-CTL-2/4)
    → pause/stop: consumer suspended at once (every outcome of theirs keeps it so)
    → fresh task GET, ownership check (D-CTL-3)
    → :func:`~agentcall.dispatcher.domain.control.decide` on the barrier *as persisted now*,
      barrier + verdict committed together (the barrier is durable before any effect)
``decided``   consumer: suspend (cancel, nack(requeue) prefetched) / drain / reopen;
              ``hangup`` policy: ask the cell to hang up live calls (not awaited to end)
              stop: drain with basic.get until the queue is confirmed empty (D-CTL-4)
    → receipt into the outbox and the job marked done in one commit
``done``

Discovery tombstones (``removed``) and start-up use :meth:`ControlProcessor.reconcile`:
the consumer is brought in line with the persisted barrier; ``removed`` also drops the
task config, keeps every execution/outbox/idempotency fact and never hangs up (D-DISC-8).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from agentcall.dispatcher.control.ports import (
    ActiveCalls,
    ControlStore,
    QueueDrainer,
    TaskConsumers,
    TaskReader,
    Verdict,
)
from agentcall.dispatcher.control.receipts import control_result
from agentcall.dispatcher.domain.control import (
    ConsumerAction,
    ControlCommand,
    ControlJob,
    JobPhase,
    ReadFailure,
    TaskFacts,
    consumer_for_barrier,
    decide,
    hangs_up,
    verify_read,
)
from agentcall.dispatcher.domain.model import TaskConfig
from agentcall.dispatcher.domain.states import Barrier
from agentcall.dispatcher.domain.validity import DEFAULT_CLOCK_SKEW_S, Validity
from agentcall.dispatcher.logs import log

LOG = logging.getLogger("dispatcher.control")


def chooser(
    command: ControlCommand,
    config: TaskConfig | ReadFailure,
    now: datetime,
    skew_s: float = DEFAULT_CLOCK_SKEW_S,
) -> Callable[[TaskFacts], Verdict]:
    """The decision to run inside the store's transaction, on the barrier persisted then."""

    def choose(facts: TaskFacts) -> Verdict:
        read = verify_read(command, config, facts.tenant, facts.seen_revision)
        window = command.validity(now, skew_s)
        decision = decide(facts.barrier, command.action, read, validity=window)
        trusted = None if isinstance(read, ReadFailure) else config
        assert trusted is None or isinstance(trusted, TaskConfig)
        return Verdict(decision, trusted)

    return choose


class ControlProcessor:
    def __init__(
        self,
        store: ControlStore,
        reader: TaskReader,
        consumers: TaskConsumers,
        drainer: QueueDrainer,
        calls: ActiveCalls,
        *,
        clock: Callable[[], datetime],
        on_receipt: Callable[[], None],
        skew_s: float = DEFAULT_CLOCK_SKEW_S,
    ) -> None:
        self._skew_s = skew_s
        self._store = store
        self._reader = reader
        self._consumers = consumers
        self._drainer = drainer
        self._calls = calls
        self._clock = clock
        self._on_receipt = on_receipt
        self.drained: dict[str, int] = {}

    async def run_job(self, seq: int) -> None:
        """Carry one control processing from its persisted phase to its receipt."""
        job = await self._store.job(seq)
        if job.phase is JobPhase.DONE:
            return
        if job.phase is JobPhase.RECEIVED:
            job = await self._decide(job)
        await self._carry_out(job)
        await self._receipt(job)

    async def _decide(self, job: ControlJob) -> ControlJob:
        if job.command.action.closes_first:
            # Admission is already closed; every pause/stop outcome leaves the consumer
            # suspended, so stop feeding requeued deliveries while the GET is in flight.
            await self._consumers.suspend(job.task_id)
        config: TaskConfig | ReadFailure = ReadFailure.UNAVAILABLE
        if job.command.validity(self._clock(), self._skew_s) is Validity.VALID:
            config = await self._reader.read_fresh(job.task_id)  # out of window: no GET
        now = self._clock()
        choose = chooser(job.command, config, now, self._skew_s)
        decided = await self._store.decide(job, choose, now)
        assert decided.decision is not None
        log(
            LOG,
            logging.INFO,
            "control.decided",
            task_id=job.task_id,
            action=job.command.action.value,
            read=config.status.value if isinstance(config, TaskConfig) else config.value,
            status=decided.decision.status.value,
            reason_code=decided.decision.reason_code,
            barrier=decided.decision.barrier.value,
            event_id=job.event_id,
        )
        return decided

    async def _carry_out(self, job: ControlJob) -> None:
        decision = job.decision
        assert decision is not None
        await self._consumer(job.task_id, decision.consumer)
        command = job.command
        if hangs_up(command.action, command.active_call_policy, decision):
            hung = await self._calls.hangup_task(job.task_id)
            log(LOG, logging.INFO, "control.hangup", task_id=job.task_id, calls=hung)
        if decision.consumer is ConsumerAction.DRAIN:
            await self.drain(job.task_id)

    async def _consumer(self, task_id: str, action: ConsumerAction) -> None:
        if action in (ConsumerAction.SUSPEND, ConsumerAction.DRAIN, ConsumerAction.DROP):
            await self._consumers.suspend(task_id)
            log(LOG, logging.INFO, "control.suspended", task_id=task_id)
        if action is ConsumerAction.DROP:
            self._reader.forget(task_id)
        if action is ConsumerAction.REOPEN:
            await self._consumers.reopen(task_id)

    async def _receipt(self, job: ControlJob) -> None:
        assert job.decision is not None
        now = self._clock()
        body = control_result(
            event_id=job.event_id,
            command=job.command,
            decision=job.decision,
            occurred_at=now,
            aggregate_version=job.seq,
        )
        await self._store.complete(job, body, now)
        self._on_receipt()

    async def drain(self, task_id: str) -> int:
        """Drain a stopped task's queue until confirmed empty; resumable (D-CTL-4)."""
        await self._store.start_drain(task_id, self._clock())

        async def progress(acked: int) -> None:
            self.drained[task_id] = acked
            await self._store.note_drain(task_id, acked, self._clock())

        report = await self._drainer.drain(task_id, progress)
        await self._store.finish_drain(task_id, self._clock())
        self.drained[task_id] = report.acked
        log(
            LOG,
            logging.INFO,
            "control.drained",
            task_id=task_id,
            acked=report.acked,
            queue_missing=report.queue_missing,
        )
        return report.acked

    async def reconcile(self, task_id: str) -> None:
        """Bring the consumer in line with the persisted barrier (start-up, discovery)."""
        barrier = await self._store.barrier(task_id)
        if barrier is None or barrier is Barrier.NONE:
            return  # opening is the consumer registry's own decision (gate, D-DISC-6)
        action = consumer_for_barrier(barrier)
        if action is ConsumerAction.DRAIN:
            await self._consumers.suspend(task_id)
            if await self._store.drain_pending(task_id):
                await self.drain(task_id)
            return
        await self._consumer(task_id, action)
