"""Task discovery v0.3 against mocksaas (D-DISC-1..9), the D running as a subprocess."""

from __future__ import annotations

import time

import pytest

from tests.acceptance.dispatcher.broker import message_count
from tests.acceptance.dispatcher.harness import Scenario
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]


def consuming(s: Scenario) -> set[str]:
    return {t["task_id"] for t in s.status()["tasks"] if t["consumer"] == "consuming"}


def test_multi_page_discovery_reads_to_the_empty_page_d_disc_3(scenario: Scenario) -> None:
    s = scenario
    s.sip()  # D-NOTE-2: nothing is admitted before a verified SIP snapshot
    s.page_size(2)
    for i in range(5):
        s.task(f"page-{i}")
    s.start()
    status = s.status()["discovery"]
    assert status["cursor"] == s.head() == 5
    assert status["pages_with_tasks"] == 3  # 2 + 2 + 1 tasks, then empty pages
    assert status["rows_applied"] == 5
    wait_for(lambda: consuming(s) == {f"page-{i}" for i in range(5)}, 10, "5 consumers")


def test_same_task_reappears_and_cross_page_update_d_disc_3(scenario: Scenario) -> None:
    """A task updated while the D is between pages reappears later with its new revision."""
    s = scenario
    s.sip()  # D-NOTE-2: nothing is admitted before a verified SIP snapshot
    s.page_size(1)
    for i in range(3):
        s.task(f"cross-{i}")
    s.fault("discovery", kind="slow", delay_ms=400, count=3)
    s.start(wait_open=False)
    wait_for(lambda: s.status()["discovery"]["cursor"] >= 1, 20, "first page applied")
    s.update_task("cross-0", max_concurrent_calls=3)  # event 4: after the pages being read
    wait_for(lambda: s.status()["admission"]["open"], 20, "caught up")
    wait_for(lambda: (s.task_row("cross-0") or {}).get("task_revision") == 2, 10, "rev 2")
    assert s.status()["discovery"]["cursor"] == s.head() == 4
    assert s.status()["discovery"]["pages_rejected"] == 0


def test_restart_continues_from_the_persisted_cursor_d_disc_1_d_disc_5(scenario: Scenario) -> None:
    s = scenario
    s.sip()  # D-NOTE-2: nothing is admitted before a verified SIP snapshot
    s.page_size(1)
    for i in range(3):
        s.task(f"restart-{i}")
    s.start()
    assert s.status()["discovery"]["cursor"] == 3
    assert s.stop() == 0
    s.task("restart-3")
    s.start()
    discovery = s.status()["discovery"]
    assert discovery["cursor"] == 4
    assert discovery["rows_applied"] == 1, "only the new task, not a re-read from 0"
    wait_for(lambda: "restart-3" in consuming(s), 10, "new task consumed")


FAULTS = [
    ("duplicate_task", "duplicate_task"),
    ("non_advancing_cursor", "cursor_not_advancing"),
    ("identity_conflict", "identity_conflict"),
    ("revision_backwards", "revision_regression"),
    ("schema_invalid", "schema_violation"),
    ("malformed_json", "schema_violation"),
]


def test_rejected_pages_keep_cursor_and_fail_closed_d_disc_4_d_disc_9(scenario: Scenario) -> None:
    s = scenario
    s.sip()
    s.task("guard")
    s.quota()
    s.start()
    cursor = s.status()["discovery"]["cursor"]
    for kind, reason in FAULTS:
        before = s.status()["discovery"]["pages_rejected"]
        s.fault("discovery", kind=kind, count=1000)
        wait_for(lambda b=before: _rejected_and_closed(s, b), 10, f"{kind} rejected")
        status = s.status()
        assert status["discovery"]["cursor"] == cursor, f"{kind} moved the cursor"
        assert [t["task_id"] for t in status["tasks"]] == ["guard"], "no fact changed"
        assert status["rejected_inputs"]["latest"][0]["reason"] == reason
        wait_for(lambda: consuming(s) == set(), 10, "consumers closed")
        s.clear_faults()
        wait_for(lambda: s.status()["admission"]["open"], 10, f"recovered after {kind}")


def _rejected_and_closed(s: Scenario, before: int) -> bool:
    status = s.status()
    return status["discovery"]["pages_rejected"] > before and not status["admission"]["open"]


def test_503_fails_closed_then_recovers_d_disc_9(scenario: Scenario) -> None:
    s = scenario
    s.sip()
    s.task("outage")
    s.quota()
    s.start()
    s.fault("discovery", kind="unavailable", count=1000)
    wait_for(lambda: not s.status()["admission"]["open"], 10, "admission closed")
    wait_for(lambda: consuming(s) == set(), 10, "consumer closed")
    ids = s.calls("outage", callees=["15000000001", "15000000009"])
    time.sleep(1.0)
    assert s.results() == [], "no admission while discovery fails"
    assert message_count(f"agent-call.d.{s.d}.task.outage.v3") == 2
    assert "503" in (s.status()["discovery"]["last_error"] or "")
    s.clear_faults()
    got = s.wait_results(2, event_type="command.result")
    assert {r["command_id"] for r in got} == set(ids)


def test_no_execution_consumed_before_first_empty_page_d_disc_6(scenario: Scenario) -> None:
    s = scenario
    s.sip()
    s.task("gate")
    s.quota()
    ids = s.calls("gate", callees=["15000000001", "15000000009", "15000000002"])
    s.fault("discovery", kind="unavailable", count=1000)
    s.start(wait_open=False)
    wait_for(lambda: s.status()["discovery"]["errors"] >= 2, 15, "discovery failing")
    status = s.status()
    assert not status["admission"]["open"]
    assert "discovery" in status["admission"]["why_closed"]
    assert consuming(s) == set()
    assert message_count(f"agent-call.d.{s.d}.task.gate.v3") == 3
    assert s.results() == []
    s.clear_faults()
    got = s.wait_results(3, event_type="command.result")
    assert {r["command_id"] for r in got} == set(ids)
