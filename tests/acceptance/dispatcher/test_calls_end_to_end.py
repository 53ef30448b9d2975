"""From call.execute to command.result and call.result through real MQ, mocksaas and a cell."""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest

from tests.acceptance.dispatcher.broker import (
    message_count,
    originate_log,
    result_binding,
    take_dead_letters,
)
from tests.acceptance.dispatcher.harness import BIN, Scenario, execute_body, unique
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]

ALL_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
CLOSED_SCHEDULE = {
    "time_zone": "America/New_York",
    "starts_at": None,
    "ends_at": None,
    "weekly_windows": {day: [] for day in ALL_DAYS},
    "excluded_dates": [],
}


def test_accepted_calls_get_one_command_and_one_call_result_d_cmd_3_d_res_1(
    scenario: Scenario,
) -> None:
    scenario.sip()
    scenario.task("task-a")
    scenario.quota()
    scenario.start()
    ids = scenario.calls("task-a", callees=["15000000001", "15000000009", "15000000008"])
    commands = scenario.wait_results(3, event_type="command.result")
    assert {r["command_id"] for r in commands} == set(ids)
    assert {r["status"] for r in commands} == {"accepted"}
    calls = scenario.wait_results(3, event_type="call.result")
    outcomes = {r["body"]["payload"]["callee"]: r["outcome"] for r in calls}
    assert outcomes == {
        "15000000001": "no_answer",
        "15000000009": "busy",
        "15000000008": "answered",
    }
    answered = next(r for r in calls if r["outcome"] == "answered")
    assert answered["body"]["payload"]["transcript"], "D-RES-1: transcript in the final result"
    for result in calls:
        assert result["body"]["payload"]["recording"]["status"] == "not_created"  # D-RES-2
        assert result["valid"], result["errors"]
    summary = scenario.summary()
    assert summary["duplicates"] == {} and summary["invalid"] == 0
    status = scenario.status()
    assert status["executions"]["finalized"] == 3
    assert status["outbox"]["delivered"] == 6
    assert scenario.secret not in scenario.log()
    assert scenario.secret not in json.dumps(status)
    base = scenario.status_url.removesuffix("/status")
    metrics = httpx.get(f"{base}/metrics", timeout=5).text
    assert "dispatcher_outbox_delivered_total 6.0" in metrics
    assert "dispatcher_admission_open 1.0" in metrics
    assert httpx.get(f"{base}/healthz", timeout=5).json() == {"status": "ok"}
    shown = subprocess.run(
        [str(BIN / "dispatcher"), "status", "--url", base],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.returncode == 0 and "admission  OPEN" in shown.stdout
    assert scenario.secret not in shown.stdout


def test_every_reject_reason_through_mq_d_cmd_2(scenario: Scenario) -> None:
    """One task per reason; each command gets exactly one command.result with that code."""
    s = scenario
    s.sip(allowed_targets=["15000000001", "15000000009"])
    s.task("ok")
    s.task("target")
    s.task("sched", schedule=CLOSED_SCHEDULE)
    s.task("auth", authorization_expires_at="2020-01-01T00:00:00Z")
    s.task("q0", tenant="tenant-zero")
    s.task("qna", tenant="tenant-na")
    s.task("tmax", max_concurrent_calls=0)
    s.task("trunk", allowed_trunk_ids=["trunk-missing"])
    s.task("expired")
    s.task("ident")
    s.task("cfg")
    s.task("gone")
    s.task("finished")
    s.quota()
    s.quota("tenant-zero", max_concurrent_calls=0)  # D-CFG-3: 0 forbids admission
    s.quota("tenant-na", max_concurrent_calls=5)
    s.saas.admin("POST", f"/dispatchers/{s.d}/tasks/finished/status", {"status": "finished"})
    # Definitive answers reject (a 503 would hold the commands instead, D-NOTE-2):
    # D-CFG-3 an identity mismatch closes the tenant; a task body breaking its schema.
    s.fault("config", resource="quota", target="tenant-na", kind="identity_conflict", count=1000)
    s.fault("config", resource="task", target="cfg", kind="schema_invalid", count=1000)
    s.fault("config", resource="task", target="gone", kind="not_found", count=1000)
    s.start()
    expected: dict[str, str] = {}
    for task_id, reason in [
        ("ok", "accepted"),
        ("sched", "outside_schedule"),
        ("auth", "agent_authorization_expired"),
        ("q0", "tenant_quota_exhausted"),
        ("qna", "tenant_quota_unavailable"),
        ("tmax", "task_concurrency_exhausted"),
        ("trunk", "no_trunk_available"),
        ("cfg", "task_config_unavailable"),
        ("gone", "task_unknown"),
    ]:
        expected[s.calls(task_id, callees=["15000000001"])[0]] = reason
    expected[s.calls("target", callees=["15000000002"])[0]] = "target_not_allowed"
    expected[s.calls("expired", callees=["15000000001"], not_after_s=-5)[0]] = "command_expired"
    for task_id, reason, kw in [
        ("ident", "identity_mismatch", {"tenant_key": "someone-else"}),
        ("finished", "task_not_running", {}),
    ]:
        body = execute_body(s.d, task_id, "15000000001", **kw)  # type: ignore[arg-type]
        s.raw(task_id, body)
        expected[json.loads(body)["command_id"]] = reason
    got = s.wait_results(len(expected), event_type="command.result")
    assert {r["command_id"]: r["reason_code"] for r in got} == expected
    assert all(r["valid"] for r in got)

    # D-CFG-1: a SIP snapshot that fails verification admits nothing (a definitive answer;
    # a 503 would hold the command in its queue instead, D-NOTE-2).
    s.fault("config", resource="sip", kind="schema_invalid", count=1000)
    wait_for(lambda: not s.status()["config"]["sip_verified_now"], 10, "SIP cache expiry")
    command_id = s.calls("ok", callees=["15000000001"])[0]
    late = s.wait_results(len(expected) + 1, event_type="command.result")
    assert {r["command_id"]: r["reason_code"] for r in late}[command_id] == "sip_config_unavailable"


def test_redelivered_command_is_never_dialled_twice_d_cmd_1(scenario: Scenario) -> None:
    s = scenario
    s.sip()
    s.task("dup")
    s.quota()
    s.start()
    command_id = unique("dup-cmd")
    for _ in range(3):
        s.calls("dup", callees=["15000000001"], command_id=command_id)
    s.wait_results(1, event_type="call.result")
    wait_for(lambda: s.status()["commands"].get("duplicate:duplicate") == 2, 10, "2 duplicates")
    commands = s.results(event_type="command.result")
    assert [r["command_id"] for r in commands] == [command_id]
    dials = [e for e in originate_log(s.cell.data) if e["tags"].get("command_id") == command_id]
    assert len(dials) == 1


def test_sigkill_midway_dials_each_command_once_d_cmd_1_d_mq_4(scenario: Scenario) -> None:
    s = scenario
    s.sip(max_concurrent_calls=100)
    s.task("crash", max_concurrent_calls=100)
    s.quota()
    s.start()
    ids = s.calls("crash", count=40, callee_start=700)
    s.wait_results(1, event_type="command.result")
    s.kill()  # SIGKILL in the middle of the batch
    s.start()
    s.wait_results(40, timeout=40, event_type="call.result")
    commands = s.results(event_type="command.result")
    assert {r["command_id"] for r in commands} == set(ids)
    per_event: dict[str, set[str]] = {}
    for r in commands:
        per_event.setdefault(r["command_id"], set()).add(r["event_id"])
    assert all(len(events) == 1 for events in per_event.values()), "one event_id per command"
    dials = [e["tags"]["command_id"] for e in originate_log(s.cell.data)]
    mine = [c for c in dials if c in set(ids)]
    assert sorted(mine) == sorted(set(mine)), "a command was dialled twice"
    calls = s.results(event_type="call.result")
    assert len({r["event_id"] for r in calls}) == len(
        {r["body"]["payload"]["execution_id"] for r in calls}
    )


def test_invalid_messages_are_dead_lettered_and_recorded_d_mq_5(scenario: Scenario) -> None:
    s = scenario
    s.sip()
    s.task("bad")
    s.quota()
    s.start()
    marker = unique("marker")
    s.raw("bad", "{not json " + marker)
    s.raw("bad", json.dumps({"command_type": "call.execute", "note": marker}))
    wait_for(lambda: s.status()["rejected_inputs"]["count"] == 2, 10, "2 rejected inputs")
    letters = wait_for(lambda: take_dead_letters(marker), 10, "dead letters")
    assert len(letters) == 2
    status = s.status()
    reasons = {e["reason"] for e in status["rejected_inputs"]["latest"]}
    assert reasons == {"invalid_json", "schema_violation"}
    assert marker not in json.dumps(status["rejected_inputs"]), "redacted: no payload"
    assert s.results() == []
    assert message_count(f"agent-call.d.{s.d}.task.bad.v3") == 0


def test_unroutable_result_is_retried_until_routable_d_mq_4(scenario: Scenario) -> None:
    s = scenario
    s.sip()
    s.task("route")
    s.quota()
    s.start()
    result_binding(s.d, bound=False)
    try:
        ids = s.calls("route", callees=["15000000009", "15000000001"])
        wait_for(lambda: s.status()["relay"]["failures"] >= 2, 15, "returned results")
        assert s.results() == []
        assert s.status()["outbox"]["pending"] >= 2
    finally:
        result_binding(s.d, bound=True)
    commands = s.wait_results(2, event_type="command.result")
    assert {r["command_id"] for r in commands} == set(ids)
    s.wait_results(2, event_type="call.result")
    wait_for(lambda: s.status()["outbox"]["pending"] == 0, 10, "outbox drained")
    assert s.summary()["duplicates"] == {}


def test_agent_version_content_is_immutable_d_cfg_2(scenario: Scenario) -> None:
    s = scenario
    s.sip()
    version = unique("agent-v")
    s.task("agent", agent_version_id=version)
    s.quota()
    s.start()
    first = s.calls("agent", callees=["15000000001"])[0]
    s.wait_results(1, event_type="command.result")
    changed = dict(ASR_ONLY_AGENT)
    s.update_task("agent", agent_config=changed, mode="asr_only")
    wait_for(lambda: s.task_row("agent")["task_revision"] == 2, 10, "revision 2 discovered")
    second = s.calls("agent", callees=["15000000001"])[0]
    got = {
        r["command_id"]: r["reason_code"] for r in s.wait_results(2, event_type="command.result")
    }
    assert got == {first: "accepted", second: "task_config_unavailable"}


ASR_ONLY_AGENT = {
    "immutable": True,
    "mode": "asr_only",
    "asr": {
        "provider_ref": "mock",
        "language": "zh-CN",
        "input": {
            "encoding": "pcm_s16le",
            "sample_rate_hz": 16000,
            "channels": 1,
            "sample_width_bytes": 2,
        },
        "interim": True,
        "timeout_ms": 5000,
    },
    "conversation": {
        "allow_interrupt": False,
        "silence_timeout_ms": 3000,
        "max_duration_ms": 60000,
        "max_turns": 20,
        "sentence_max_chars": 80,
        "max_pending_audio_chunks": 32,
    },
}
