"""The per-task counters (calls by task and outcome, call.execute decisions by task and
decision): bounded to the first tasks a process sees, then ``_other``; and the values that
only grow (delivered outbox rows, finalized executions) rendered as counters, not gauges."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.telemetry.labels import OTHER, FirstSeen
from agentcall.dispatcher.telemetry.prometheus import PrometheusTelemetry
from agentcall.dispatcher.web import metrics
from tests.support import metric_names

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("limit", "seen", "labels"),
    [
        (2, ["a", "b", "c", "a", "c"], ["a", "b", OTHER, "a", OTHER]),
        (0, ["a"], [OTHER]),
        (3, ["", "x" * 129, OTHER, "t"], [OTHER, OTHER, OTHER, "t"]),  # refused ids take no place
        (1, ["x" * 128, "y"], ["x" * 128, OTHER]),
    ],
)
def test_task_labels_are_the_first_tasks_seen_then_other(
    limit: int, seen: list[str], labels: list[str]
) -> None:
    label = FirstSeen(limit)
    assert [label(v) for v in seen] == labels


def samples(t: PrometheusTelemetry, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for f in metric_names.families(t.render().decode())
        for s in f.samples
        if s.name == name
    }


def test_calls_are_counted_by_task_and_outcome_and_bounded() -> None:
    t = PrometheusTelemetry(task_limit=2)
    for task in ("camp-a", "camp-a", "camp-b", "camp-c", "camp-d"):
        t.call_result("answered", "none", "uploaded", task)
    t.call_result("no_answer", "no_answer", "not_created", "camp-a")
    got = samples(t, "dispatcher_task_calls_total")
    assert got == {
        (("outcome", "answered"), ("task", "camp-a")): 2,
        (("outcome", "answered"), ("task", "camp-b")): 1,
        (("outcome", "answered"), ("task", OTHER)): 2,
        (("outcome", "no_answer"), ("task", "camp-a")): 1,
    }
    # the unlabelled totals stay what they were
    assert samples(t, "dispatcher_calls_total")[(("outcome", "answered"), ("reason", "none"))] == 5


def test_command_decisions_are_counted_by_task_and_bounded() -> None:
    t = PrometheusTelemetry(task_limit=1)
    t.commands_decided([("camp-a", "accepted"), ("camp-a", "rejected"), ("camp-b", "accepted")])
    t.commands_decided([("camp-a", "accepted")])
    assert samples(t, "dispatcher_task_commands_total") == {
        (("decision", "accepted"), ("task", "camp-a")): 2,
        (("decision", "rejected"), ("task", "camp-a")): 1,
        (("decision", "accepted"), ("task", OTHER)): 1,
    }
    assert metric_names.violations(t.render().decode(), ("dispatcher_",)) == []


def snapshot() -> dict[str, object]:
    return {
        "admission": {"open": True},
        "outbox": {"pending": 2, "delivered": 7, "blocked_payload_too_large": 1},
        "executions": {"accepted": 1, "in_call": 2, "finalized": 9},
        "commands": {"accepted:accepted": 3},
        "discovery": {"cursor": 1, "errors": 0, "pages_rejected": 0},
        "tasks": [],
        "relay": {"published": 7},
        "rejected_inputs": {"count": 0},
        "amqp": {"connected": True},
        "readiness": {"ready": True, "causes": []},
        "outbox_backlog": {"pending": 2, "oldest_pending_age_s": 1.5},
        "calls": {"cell_reachable": True},
    }


def test_delivered_outbox_rows_and_finalized_executions_are_counters() -> None:
    text = metrics.render(snapshot()).decode()
    types = {f.name: f.type for f in metric_names.families(text)}
    assert types["dispatcher_outbox_delivered"] == "counter"
    assert types["dispatcher_executions_finalized"] == "counter"
    assert "dispatcher_outbox_delivered_total 7.0" in text
    assert "dispatcher_executions_finalized_total 9.0" in text
    # the gauges keep only the states a row or an execution leaves
    assert 'dispatcher_outbox_events{state="pending"} 2.0' in text
    assert 'dispatcher_outbox_events{state="blocked_payload_too_large"} 1.0' in text
    assert 'dispatcher_executions{state="in_call"} 2.0' in text
    assert 'state="delivered"' not in text and 'state="finalized"' not in text
    assert metric_names.violations(text, ("dispatcher_",)) == []
