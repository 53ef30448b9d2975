"""The outage tracker: what a failing read holds, its retries, the start-up SIP gate
(D-NOTE-2), on a fake clock and a scripted read."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from agentcall.dispatcher.discovery.gate import Gate
from agentcall.dispatcher.domain.outage import SIP, STALE, Read, ReadKey
from agentcall.dispatcher.saas.outage import OUTAGE_GATE, START_GATE, ReadOutcome, SaasOutages

T0 = datetime(2026, 3, 2, tzinfo=UTC)
TASK_A = ReadKey(Read.TASK, "task-a")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def tracker(clock: Clock, changes: list[int]) -> tuple[Gate, SaasOutages]:
    gate = Gate()
    gate.lift("discovery", T0)
    outages = SaasOutages(
        gate,
        clock=clock,
        base_s=1,
        cap_s=8,
        on_change=lambda: changes.append(1),
        rng=lambda: 0.999999,
    )
    return gate, outages


def test_admission_waits_for_a_verified_sip_snapshot_at_start_d_note_2() -> None:
    clock, changes = Clock(), []
    gate, outages = tracker(clock, changes)
    assert not gate.open and START_GATE in gate.reasons
    outages.recovered(SIP)
    assert gate.open


def test_a_failing_read_holds_what_depends_on_it_and_backs_off_d_note_2() -> None:
    clock, changes = Clock(), []
    gate, outages = tracker(clock, changes)
    outages.recovered(SIP)
    outages.fail(TASK_A, 503, "service_unavailable")
    assert outages.blocking("task-a", "tenant-1") == TASK_A
    assert outages.blocking("task-b", "tenant-1") is None
    assert gate.open, "a task outage holds its task only"
    delays = []
    for _ in range(5):
        entry = outages.status()["active"][0]
        delays.append(datetime.fromisoformat(entry["next_retry_at"]) - clock.now)
        outages.fail(TASK_A, 503, "service_unavailable")
    assert [round(d.total_seconds()) for d in delays] == [1, 2, 4, 8, 8]  # capped
    status = outages.status()
    assert status["read_failures"]["task"] == 6 and status["active"][0]["failures"] == 6
    assert len(changes) == 1, "listeners hear the start of an outage once"
    outages.recovered(TASK_A)
    assert outages.blocking("task-a", "tenant-1") is None and len(changes) == 2


def test_a_sip_outage_closes_the_whole_gate_until_the_snapshot_reads_again_d_note_2() -> None:
    clock, changes = Clock(), []
    gate, outages = tracker(clock, changes)
    outages.recovered(SIP)
    outages.fail(SIP, None, "timeout")
    assert not gate.open and OUTAGE_GATE in gate.reasons
    assert outages.blocking("any-task", "any-tenant") == SIP
    outages.recovered(SIP)
    assert gate.open


async def test_the_loop_retries_until_the_read_succeeds_or_answers_definitively() -> None:
    clock, changes = Clock(), []
    gate, outages = tracker(clock, changes)
    answers = {
        SIP: [ReadOutcome(False, 503, "service_unavailable"), ReadOutcome(True)],
        TASK_A: [ReadOutcome(False, 200, STALE), ReadOutcome(False, 404, "resource_not_found")],
    }
    asked: list[ReadKey] = []

    async def retry(key: ReadKey, tenant_key: str) -> ReadOutcome:
        asked.append(key)
        clock.now += timedelta(seconds=10)  # every retry is due at once
        return answers[key].pop(0) if len(answers[key]) > 1 else answers[key][0]

    loop = asyncio.create_task(outages.run(retry))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if gate.open:
            break
    assert gate.open, "the first SIP read failed, the second verified it"
    outages.fail(TASK_A, 200, STALE)
    clock.now += timedelta(seconds=30)  # due now; its stale retry is due 2 s later
    for _ in range(600):
        await asyncio.sleep(0.01)
        clock.now += timedelta(seconds=1)
        if not outages.active:
            break
    loop.cancel()
    assert not outages.active, "a definitive 404 ends the outage: admission decides as before"
    assert asked.count(TASK_A) == 2
