"""Pause / resume / stop / removed procedures against fakes behind the control ports.

The shared event log proves the order of effects the contract demands: admission closed
and durable before the GET, barrier before consumer effects, receipt last (D-CTL-2..5).
"""

from __future__ import annotations

import asyncio

from agentcall.dispatcher.domain.control import ControlCommand, JobPhase, ReadFailure
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from tests.support.control_fakes import NOW, Rig, command, config, rig
from tests.support.control_fakes import raw as _raw


async def run(r: Rig, *commands: ControlCommand) -> None:
    for cmd in commands:
        job = await r.store.receive(cmd, f"event-{len(r.store.jobs) + 1}", NOW)
        await r.processor.run_job(job.seq)


def receipt(r: Rig, index: int = -1) -> tuple[str, str, str, str]:
    payload = r.store.outbox[index]["payload"]
    assert isinstance(payload, dict)
    return payload["action"], payload["status"], payload["reason_code"], payload["task_state"]


async def test_pause_closes_and_suspends_first_then_verifies_then_receipt_d_ctl_2() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("paused"))
    await run(r, command("pause", policy="drain"))
    assert r.events == [
        "barrier:closed",
        "received:pause",
        "suspend",
        "read:paused",
        "barrier:paused",
        "suspend",
        "receipt:applied:paused",
    ]
    assert receipt(r) == ("pause", "applied", "applied", "paused")


async def test_pause_with_hangup_policy_hangs_up_before_the_receipt_d_ctl_2() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("paused"))
    await run(r, command("pause", policy="hangup"))
    assert r.events[-3:] == ["suspend", "hangup", "receipt:applied:paused"]


async def test_pause_against_running_authority_is_rejected_and_stays_closed_d_ctl_5() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("running"))
    await run(r, command("pause", policy="hangup"))
    assert r.store.tasks["task-a"].barrier is Barrier.CLOSED
    assert receipt(r) == ("pause", "rejected", "state_mismatch", "closed")
    assert "hangup" not in r.events and "suspend" in r.events


async def test_control_while_the_task_get_fails_task_unavailable_admission_closed_d_ctl_5() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", ReadFailure.UNAVAILABLE)
    await run(r, command("stop", policy="drain"))
    assert r.store.tasks["task-a"].barrier is Barrier.CLOSED
    assert receipt(r) == ("stop", "rejected", "task_unavailable", "closed")
    assert "drain" not in r.events


async def test_resume_lifts_only_on_fresh_running_and_reopens_the_same_queue_d_ctl_3() -> None:
    r = rig(task_a=Barrier.PAUSED)
    r.reader.script("task-a", config("running", revision=7))
    await run(r, command("resume"))
    assert r.events[-3:] == ["barrier:none", "reopen", "receipt:applied:running"]
    assert r.store.tasks["task-a"].control_revision == 7
    assert r.store.tasks["task-a"].status is TaskStatus.RUNNING


async def test_resume_for_a_stopped_task_is_a_state_mismatch_d_ctl_3() -> None:
    r = rig(task_a=Barrier.STOPPED)
    r.reader.script("task-a", config("running"))
    await run(r, command("resume"))
    assert receipt(r) == ("resume", "rejected", "state_mismatch", "stopped")
    assert "reopen" not in r.events and r.store.tasks["task-a"].barrier is Barrier.STOPPED


async def test_expired_resume_never_reopens_and_says_command_expired_d_note_3() -> None:
    r = rig(task_a=Barrier.PAUSED)
    r.reader.script("task-a", config("running"))
    await run(r, command("resume", expired=True))  # not_after == now: already expired
    assert receipt(r) == ("resume", "rejected", "command_expired", "paused")
    assert "reopen" not in r.events
    assert not any(e.startswith("read:") for e in r.events), "no GET for an expired control"


async def test_expired_pause_and_stop_fail_closed_without_applying_d_note_3() -> None:
    r = rig(task_a=Barrier.NONE, task_b=Barrier.NONE)
    r.reader.script("task-a", config("paused"))
    r.reader.script("task-b", config("stopped", task_id="task-b"))
    await run(r, command("pause", expired=True), command("stop", "task-b", expired=True))
    assert receipt(r, 0) == ("pause", "rejected", "command_expired", "closed")
    assert receipt(r, 1) == ("stop", "rejected", "command_expired", "closed")
    assert r.store.tasks["task-a"].barrier is Barrier.CLOSED
    assert r.store.tasks["task-b"].barrier is Barrier.CLOSED, "never the stopped barrier"
    assert "drain" not in r.events


async def test_control_issued_in_the_future_is_an_invalid_window_d_note_3() -> None:
    r = rig(task_a=Barrier.PAUSED)
    r.reader.script("task-a", config("running"))
    await run(r, command("resume", future=True))
    assert receipt(r) == ("resume", "rejected", "invalid_validity_window", "paused")


async def test_resume_answered_by_a_stale_replica_is_a_state_mismatch_d_note_1() -> None:
    r = rig(task_a=Barrier.PAUSED)
    r.store.tasks["task-a"].seen_revision = 6
    r.reader.script("task-a", config("running", revision=3), config("running", revision=7))
    await run(r, command("resume"))
    assert receipt(r) == ("resume", "rejected", "state_mismatch", "paused")
    assert "reopen" not in r.events and r.store.tasks["task-a"].control_revision == 0
    await run(r, command("resume"))
    assert receipt(r) == ("resume", "applied", "applied", "running")


async def test_resume_with_foreign_tenant_in_the_get_is_task_unavailable_d_ctl_3() -> None:
    r = rig(task_a=Barrier.PAUSED)
    r.reader.script("task-a", config("running", tenant="tenant-z"))
    await run(r, command("resume"))
    assert receipt(r) == ("resume", "rejected", "task_unavailable", "paused")
    assert r.store.tasks["task-a"].control_revision == 0  # an unowned read records nothing


async def test_stop_drains_before_its_receipt_and_hangs_up_first_d_ctl_4() -> None:
    r = rig(task_a=Barrier.PAUSED)
    r.reader.script("task-a", config("stopped"))
    await run(r, command("stop", policy="hangup"))
    assert r.events == [
        "received:stop",
        "suspend",
        "read:stopped",
        "barrier:stopped",
        "suspend",
        "hangup",
        "drain",
        "drained:10",
        "receipt:applied:stopped",
    ]
    assert r.store.drains["task-a"] == "drained" and r.store.drain_acked["task-a"] == 10


async def test_stop_receipt_waits_for_an_interrupted_drain_single_receipt_d_ctl_4() -> None:
    """A broken drain is retried on the lane; one processing → one receipt, one event_id."""
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("stopped"))
    r.drainer.fail_times = 2
    settle = await r.service.handle(_raw("stop"))
    assert settle == "ack"
    await r.lanes.join()
    assert [e for e in r.events if e.startswith("drain")] == [
        "drain",
        "drain",
        "drain",
        "drained:10",
    ]
    assert len(r.store.outbox) == 1 and r.store.outbox[0]["event_id"] == "event-1"
    assert r.events.count("read:stopped") == 1  # the decision is persisted, not re-read


async def test_restart_after_decision_continues_without_a_second_get_d_ctl_4() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("stopped"))
    r.drainer.hold = asyncio.Event()
    await r.service.handle(_raw("stop"))
    while "drain" not in r.events:
        await asyncio.sleep(0)
    await r.lanes.close()  # the process dies mid-drain
    assert r.store.jobs[1].phase is JobPhase.DECIDED and not r.store.outbox
    r2 = rig()
    r2.store.tasks, r2.store.jobs, r2.store.drains = r.store.tasks, r.store.jobs, r.store.drains
    assert await r2.service.recover() == 1
    await r2.lanes.join()
    assert "read:stopped" not in r2.events
    assert r2.events[-1] == "receipt:applied:stopped"
    assert r2.store.outbox[0]["event_id"] == "event-1"


async def test_stop_arriving_while_pause_is_applied_runs_after_it_d_ctl_1() -> None:
    """Race: the SaaS stops while the D is pausing. Serial lane: pause first, then stop."""
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("stopped"), config("stopped"))
    await r.service.handle(_raw("pause"))
    await r.service.handle(_raw("stop"))
    await r.lanes.join()
    assert [receipt(r, 0), receipt(r, 1)] == [
        ("pause", "rejected", "state_mismatch", "closed"),
        ("stop", "applied", "applied", "stopped"),
    ]
    assert r.store.tasks["task-a"].barrier is Barrier.STOPPED


async def test_out_of_order_resume_before_pause_converges_closed_d_ctl_5() -> None:
    """SaaS: pause then resume; the D sees resume (GET paused) then pause (GET running)."""
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("paused"), config("running"), config("running"))
    await r.service.handle(_raw("resume"))
    await r.service.handle(_raw("pause"))
    await r.lanes.join()
    assert [receipt(r, 0)[1:], receipt(r, 1)[1:]] == [
        ("rejected", "state_mismatch", "closed"),
        ("rejected", "state_mismatch", "closed"),
    ]
    await r.service.handle(_raw("resume"))
    await r.lanes.join()
    assert receipt(r) == ("resume", "applied", "applied", "running")
    assert r.store.tasks["task-a"].barrier is Barrier.NONE


async def test_repeated_pause_is_idempotent_on_state_with_its_own_receipt_d_ctl_1() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("paused"))
    await r.service.handle(_raw("pause"))
    await r.service.handle(_raw("pause"))
    await r.lanes.join()
    assert [b["event_id"] for b in r.store.outbox] == ["event-1", "event-2"]
    assert {receipt(r, 0), receipt(r, 1)} == {("pause", "applied", "applied", "paused")}


async def test_control_for_a_task_discovery_has_not_brought_yet_creates_it() -> None:
    r = rig()
    r.reader.script("task-n", config("paused", task_id="task-n"))
    await run(r, command("pause", task_id="task-n"))
    assert r.store.tasks["task-n"].barrier is Barrier.PAUSED
    assert receipt(r) == ("pause", "applied", "applied", "paused")


async def test_removed_tombstone_suspends_and_drops_config_never_hangs_up_d_disc_8() -> None:
    r = rig(task_a=Barrier.REMOVED)
    r.service.after_discovery(["task-a"])
    await r.lanes.join()
    assert r.events == ["suspend", "forget"]
    assert r.reader.forgotten == ["task-a"] and not r.store.outbox


async def test_discovery_closed_suspends_and_a_running_task_is_left_alone_d_disc_7() -> None:
    r = rig(task_a=Barrier.CLOSED, task_b=Barrier.NONE)
    r.service.after_discovery(["task-a", "task-b"])
    await r.lanes.join()
    assert r.events == ["suspend"]


async def test_restart_resumes_an_interrupted_drain_without_an_open_job_d_ctl_4() -> None:
    r = rig(task_a=Barrier.STOPPED, task_b=Barrier.STOPPED)
    r.store.drains = {"task-a": "draining", "task-b": "drained"}
    assert await r.service.recover() == 0
    await r.lanes.join()
    assert r.events == ["suspend", "drain", "drained:10"]
    assert r.store.drains == {"task-a": "drained", "task-b": "drained"}
    assert not r.store.outbox  # no control in flight → no receipt invented


async def test_receipt_wakes_the_outbox_relay() -> None:
    r = rig(task_a=Barrier.NONE)
    r.reader.script("task-a", config("paused"))
    await run(r, command("pause"))
    assert r.receipts_woken == [1]
