"""The contract's edges a real SaaS hits first (D-NOTE-1..9), through real processes:
mocksaas, RabbitMQ, a sim cell and ``dispatcher run``. One D per test; related rules
share it."""

from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.acceptance.dispatcher.broker import message_count, originate_log, take_dead_letters
from tests.acceptance.dispatcher.harness import BIN, Scenario, execute_body, unique
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]

ALLOWED = "15000000001"  # in mocksaas's default whitelist; no answer in the sim script


# --- helpers ------------------------------------------------------------------------------
def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def control_body(
    s: Scenario,
    task_id: str,
    action: str,
    *,
    issued_in_s: int = 0,
    not_after_s: int = 300,
    dispatcher_id: str | None = None,
    trace: str = "trace-edge",
) -> str:
    now = datetime.now(UTC)
    payload: dict[str, Any] = {"task_id": task_id, "action": action}
    if action != "resume":
        payload["active_call_policy"] = "drain"
    payload["reason"] = "contract edge test"
    return json.dumps(
        {
            "schema_version": "command-next.v0.1-proposal",
            "dispatcher_id": dispatcher_id or s.d,
            "tenant_id": "tenant-1",
            "tenant_key": "key-tenant-1",
            "trace_id": trace,
            "issued_at": stamp(now + timedelta(seconds=issued_in_s)),
            "command_type": "task.control",
            "not_after": stamp(now + timedelta(seconds=not_after_s)),
            "payload": payload,
        }
    )


def raw_control(s: Scenario, body: str) -> Any:
    raw = {"target": "control", "body": body}
    return s.saas.admin("POST", f"/dispatchers/{s.d}/faults/raw", raw)


def receipts(s: Scenario, task_id: str) -> list[dict[str, Any]]:
    return s.results(command_type="task.control", task_id=task_id)


def wait_receipts(s: Scenario, task_id: str, count: int, timeout: float = 20) -> list[Any]:
    def enough() -> list[dict[str, Any]] | None:
        found = receipts(s, task_id)
        return found if len(found) >= count else None

    return list(wait_for(enough, timeout, f"{count} receipts of {task_id}"))


def verdict(receipt: dict[str, Any]) -> tuple[str, str, str, str]:
    return receipt["action"], receipt["status"], receipt["reason_code"], receipt["task_state"]


def executes(s: Scenario) -> dict[str, str]:
    return {r["command_id"]: r["reason_code"] for r in s.results(command_type="call.execute")}


def task_queue(s: Scenario, task_id: str) -> str:
    return f"agent-call.d.{s.d}.task.{task_id}.v3"


def metrics(s: Scenario) -> str:
    return httpx.get(s.status_url.removesuffix("/status") + "/metrics", timeout=5).text


def set_status(s: Scenario, task_id: str, status: str) -> Any:
    body = {"status": status, "active_call_policy": "drain"}
    return s.saas.admin("POST", f"/dispatchers/{s.d}/tasks/{task_id}/status", body)


def resume(s: Scenario, task_id: str) -> Any:
    body = {"action": "resume"}
    return s.saas.admin("POST", f"/dispatchers/{s.d}/tasks/{task_id}/controls", body)


def ready(s: Scenario, *task_ids: str, **env: str) -> None:
    s.sip(max_concurrent_calls=1000)
    for task_id in task_ids:
        s.task(task_id, max_concurrent_calls=1000)
    s.quota(max_concurrent_calls=1000)
    s.start(**env)


# --- D-NOTE-1 -------------------------------------------------------------------------------
def test_stale_replica_resume_is_refused_then_a_fresh_resume_dials_d_note_1(
    scenario: Scenario,
) -> None:
    s, task = scenario, "task-stale"
    ready(s, task)
    set_status(s, task, "paused")  # revision 2
    assert verdict(wait_receipts(s, task, 1)[0]) == ("pause", "applied", "applied", "paused")
    ids = s.calls(task, callees=[ALLOWED, "15000000002"])
    s.fault("config", resource="task", target=task, kind="stale_replica", count=1)
    set_status(s, task, "running")  # revision 3; its resume is answered by a replica at 1
    stale = wait_receipts(s, task, 2)[1]
    assert verdict(stale) == ("resume", "rejected", "state_mismatch", "paused")
    time.sleep(1.0)
    assert executes(s) == {}, "nothing admitted on a stale answer"
    assert message_count(task_queue(s, task)) == 2
    resume(s, task)  # the SaaS tries again; a current replica answers revision 3
    fresh = wait_receipts(s, task, 3)[2]
    assert verdict(fresh) == ("resume", "applied", "applied", "running")
    s.wait_results(2, command_type="call.execute")
    assert executes(s) == dict.fromkeys(ids, "accepted")


# --- D-NOTE-2 -------------------------------------------------------------------------------
OUTAGE_S = 20


def test_20s_outage_of_the_config_reads_rejects_nothing_d_note_2(scenario: Scenario) -> None:
    """SIP, task and quota reads answer 503 for 20 s with 20 commands queued: none is
    rejected or dialled meanwhile, all are accepted after it; commands whose not_after
    passes during the outage get exactly one ``command_expired`` each."""
    s = scenario
    ready(s, "task-out", "task-late", DISPATCHER_SAAS_RETRY_MAX_S="2")
    for resource in ("sip", "task", "quota"):
        s.fault("config", resource=resource, kind="unavailable", count=10_000)
    time.sleep(1.0)  # every cached read expires (TTL 0.5 s)
    ids = s.calls("task-out", count=20, callee_start=100)
    late = s.calls("task-late", count=5, callee_start=200, not_after_s=4)
    started = time.monotonic()
    time.sleep(3.0)
    assert s.results() == [], "a command was decided during the outage"
    outage = wait_for(lambda: s.status()["outages"]["active"], 10, "the outage in /status")
    assert {o["read"] for o in outage} >= {"sip"}
    assert all(o["since"] and o["next_retry_at"] for o in outage)
    assert not s.status()["admission"]["open"]
    while time.monotonic() - started < OUTAGE_S:
        assert s.results() == [], "a command was decided during the outage"
        time.sleep(1.0)
    mine = set(ids) | set(late)
    assert not [e for e in originate_log(s.cell.data) if e["tags"].get("command_id") in mine]
    assert 'dispatcher_saas_read_failures_total{resource="sip"}' in metrics(s)
    s.clear_faults()
    got = {r["command_id"]: r for r in s.wait_results(25, timeout=30, event_type="command.result")}
    assert {c: got[c]["reason_code"] for c in ids} == dict.fromkeys(ids, "accepted")
    assert {c: got[c]["reason_code"] for c in late} == dict.fromkeys(late, "command_expired")
    time.sleep(1.0)
    assert len(s.results(event_type="command.result")) == 25, "exactly one result each"
    wait_for(lambda: s.status()["outages"]["active"] == [], 10, "the outage over")


# --- D-NOTE-3 -------------------------------------------------------------------------------
def test_expired_and_future_commands_are_rejected_and_controls_fail_closed_d_note_3(
    scenario: Scenario,
) -> None:
    s, task = scenario, "task-exp"
    ready(s, task)
    future = execute_body(s.d, task, ALLOWED, command_id=unique("future"))
    future_body = json.loads(future)
    future_body["issued_at"] = stamp(datetime.now(UTC) + timedelta(seconds=600))
    future_body["not_after"] = stamp(datetime.now(UTC) + timedelta(seconds=900))
    s.raw(task, json.dumps(future_body))
    s.wait_results(1, command_type="call.execute")
    assert executes(s) == {future_body["command_id"]: "invalid_validity_window"}

    raw_control(s, control_body(s, task, "pause", not_after_s=-5))  # expired pause
    first = wait_receipts(s, task, 1)[0]
    assert verdict(first) == ("pause", "rejected", "command_expired", "closed")
    wait_for(lambda: (s.task_row(task) or {}).get("barrier") == "closed", 10, "closed")
    waiting = s.calls(task, callees=[ALLOWED])
    raw_control(s, control_body(s, task, "resume", not_after_s=-5))  # expired resume
    raw_control(s, control_body(s, task, "resume", issued_in_s=600))  # from the future
    second, third = wait_receipts(s, task, 3)[1:]
    assert verdict(second) == ("resume", "rejected", "command_expired", "closed")
    assert verdict(third) == ("resume", "rejected", "invalid_validity_window", "closed")
    time.sleep(1.0)
    assert message_count(task_queue(s, task)) == 1, "admission stays closed"
    assert (s.task_row(task) or {}).get("barrier") == "closed"
    resume(s, task)  # a fresh, valid resume reopens; the waiting command is dialled
    fourth = wait_receipts(s, task, 4)[3]
    assert verdict(fourth) == ("resume", "applied", "applied", "running")
    s.wait_results(2, command_type="call.execute")
    assert executes(s)[waiting[0]] == "accepted"


# --- D-NOTE-4, D-NOTE-6, D-NOTE-8 -----------------------------------------------------------
def test_foreign_dispatcher_empty_whitelist_and_one_d_per_state_file_d_note_4_6_8(
    scenario: Scenario,
) -> None:
    s, task = scenario, "task-id"
    s.sip(allowed_targets=[])  # D-NOTE-6: an empty whitelist allows nobody
    s.task(task)
    s.quota()
    s.start()
    other = "0b0c2a6e-6d2e-4a53-9a4e-3f7c1c1d9e21"
    marker = unique("foreign")
    s.raw(task, execute_body(other, task, ALLOWED, command_id=marker))
    raw_control(s, control_body(s, task, "pause", dispatcher_id=other, trace=marker))
    letters = wait_for(lambda: take_dead_letters(marker), 15, "both dead-lettered")
    assert len(letters) == 2  # D-NOTE-4: the same handling for both kinds
    reasons = [e["reason"] for e in s.status()["rejected_inputs"]["latest"]]
    assert reasons.count("wrong_dispatcher") == 2
    (barred,) = s.calls(task, callees=[ALLOWED])
    s.wait_results(1, command_type="call.execute")
    assert executes(s) == {barred: "target_not_allowed"}
    published = s.results()
    assert published and all(r["body"]["dispatcher_id"] == s.d for r in published)
    assert not [e for e in originate_log(s.cell.data) if e["tags"].get("command_id") == marker]

    # D-NOTE-8: a second D on the same state file refuses to start, at once.
    second = subprocess.run(
        [str(BIN / "dispatcher"), "run"],
        env={**os.environ, **s.env(DISPATCHER_HTTP_PORT="0")},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 2
    assert "another dispatcher process uses the state database" in second.stderr
    assert s.proc is not None and s.proc.alive and s.status()["admission"]["open"]


# --- D-NOTE-5 -------------------------------------------------------------------------------
def test_257_tasks_with_7_stopped_refuse_the_page_visibly_d_note_5(scenario: Scenario) -> None:
    s = scenario
    s.sip()
    s.page_size(100)
    with ThreadPoolExecutor(8) as pool:  # 257 queues declared by mocksaas, 8 at a time
        list(pool.map(lambda n: s.task(f"q-{n:03d}"), range(256)))
    s.task("q-256", over_queue_limit=True)  # a SaaS that assigns one queue too many
    s.quota()
    for n in range(7):
        set_status(s, f"q-{n:03d}", "stopped")
    s.start(wait_open=False)

    def refused() -> dict[str, Any] | None:
        # One /status read while the refusal is current: once the SaaS retires the seven
        # stopped tasks (the D sees them `removed`) the page fits (D-NOTE-5 counts tasks not
        # yet retired) and admission opens, so a later read could already see that.
        status = s.status()
        disc = status["discovery"]
        counted = disc.get("rejected_by_reason", {}).get("queue_limit_exceeded")
        retired = any(t["status"] == "removed" for t in status["tasks"])
        return status if counted and not disc["caught_up"] and not retired else None

    status = wait_for(refused, 30, "the page refused", step=0.01)  # the window is short
    assert "queue_limit_exceeded" in (status["discovery"]["last_error"] or "")
    assert not status["admission"]["open"]
    assert "discovery" in status["admission"]["why_closed"]
    assert len(status["tasks"]) <= 256 and not any(
        t["consumer"] == "consuming" for t in status["tasks"]
    ), "no task is consumed while the limit is exceeded"
    assert 'dispatcher_discovery_pages_refused_total{reason="queue_limit_exceeded"}' in metrics(s)
    assert '"discovery.failed"' in s.log() and "queue_limit_exceeded" in s.log()


# --- D-NOTE-9 -------------------------------------------------------------------------------
def test_a_cell_not_carrying_the_snapshot_closes_admission_visibly_d_note_9(
    scenario: Scenario,
) -> None:
    s, task = scenario, "task-cell"
    default = s.sip(carry=False)
    other = {**default, "artifact": {**default["artifact"], "cell_id": "cell-other"}}
    approved_other = s.saas.admin("PUT", f"/dispatchers/{s.d}/sip", {"snapshot": other})
    s.cell.carry(approved_other)  # the configuration matches, the cell's own id does not
    s.task(task)
    s.quota()
    s.start(wait_open=False)

    def closed_by_cell() -> str:
        return str(s.status()["admission"]["why_closed"].get("cell_identity") or "")

    assert "cell_id" in wait_for(
        lambda: "cell_id" in closed_by_cell() and closed_by_cell(), 20, "closed by the cell's id"
    )
    (waiting,) = s.calls(task, callees=[ALLOWED])
    time.sleep(1.0)
    assert executes(s) == {} and message_count(task_queue(s, task)) == 1
    assert "dispatcher_cell_identity_mismatch 1.0" in metrics(s)
    approved = s.sip(carry=False)  # now for this cell's id; the cell still carries the old
    wait_for(lambda: "configuration" in closed_by_cell(), 20, "digest mismatch")
    s.cell.carry(approved)  # the approved snapshot: admission opens
    wait_for(lambda: s.status()["admission"]["open"], 20, "admission open")
    s.wait_results(1, command_type="call.execute")
    assert executes(s) == {waiting: "accepted"}
    assert '"cell_identity.mismatch"' in s.log()
