"""Dispatcher tracing end to end: mocksaas, a real `dispatcher run`, RabbitMQ, a sim cell
recording to SeaweedFS, and the in-process OTLP collector. One call.execute is one trace:
the command's `traceparent` header is its parent, and admission, originate, call, recording
upload and result publish (with its outbox delivery) are the root's children."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acceptance.dispatcher.broker import Publisher
from tests.acceptance.dispatcher.harness import (
    Cell,
    MockSaas,
    Scenario,
    execute_body,
    s3_env,
    unique,
)
from tests.support.cell_scripts import recorded_talk_script
from tests.support.otlp_collector import Collector, Span, collector
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq, pytest.mark.s3]

# *1 talks and records, *2 is busy, everyone else does not answer.
SCRIPT = recorded_talk_script()
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
RECORDED = "15000000001"
BLOCKED = "opentelemetry imported while tracing is off"
BUSY = "15000000002"
CONSUMER = 5  # OTLP's span kind


@pytest.fixture(scope="module")
def rec_cell(tmp_path_factory: pytest.TempPathFactory, saas: MockSaas) -> Iterator[Cell]:
    process = Cell(tmp_path_factory.mktemp("trace-cell"), SCRIPT).start()
    yield process
    process.proc.stop()


@pytest.fixture
def scene(saas: MockSaas, rec_cell: Cell, workdir: Path) -> Iterator[Scenario]:
    s = Scenario(saas, rec_cell, workdir)
    yield s
    if s.proc is not None and s.proc.alive:
        s.stop()


@pytest.fixture
def otlp() -> Iterator[Collector]:
    with collector() as running:
        yield running


def _publish(
    s: Scenario, task_id: str, callee: str, headers: dict[str, str] | None, not_after_s: int = 600
) -> str:
    command_id = f"cmd-{uuid.uuid4().hex[:8]}"
    text = execute_body(s.d, task_id, callee, command_id=command_id, not_after_s=not_after_s)
    body = text.encode()
    publisher = Publisher()
    try:
        properties = {"headers": headers} if headers else None
        publisher.publish(f"d.{s.d}.task.{task_id}.in", [body], properties)
    finally:
        publisher.close()
    return command_id


def _trace_of(otlp: Collector, command_id: str) -> list[Span]:
    """Every span of the trace whose root names `command_id`, once that root is exported."""
    roots = [
        span
        for span in otlp.named("dispatcher.call.execute")
        if span.attributes.get("dispatcher.command.id") == command_id
    ]
    if not roots:
        return []
    with otlp.lock:
        return [span for span in otlp.spans if span.trace_id == roots[0].trace_id]


def _wait_trace(otlp: Collector, command_id: str) -> dict[str, list[Span]]:
    spans = wait_for(lambda: _trace_of(otlp, command_id) or None, 30, f"trace of {command_id}")
    tree: dict[str, list[Span]] = {}
    for span in spans:
        tree.setdefault(span.name, []).append(span)
    return tree


def _one(tree: dict[str, list[Span]], name: str) -> Span:
    spans = tree.get(name, [])
    assert len(spans) == 1, (name, sorted(tree))
    return spans[0]


def _start(s: Scenario, **env: str) -> str:
    """The D started on a new task (tasks belong to one D), whose id is returned."""
    task_id = unique("task-tr")
    s.sip()
    s.task(task_id, ring_timeout_ms=5000)
    s.quota()
    s.start(**s3_env(f"it-trace-{uuid.uuid4().hex[:8]}"), **env)
    return task_id


def test_one_call_execute_is_one_trace_continuing_the_command_traceparent(
    scene: Scenario, otlp: Collector
) -> None:
    task_id = _start(scene, DISPATCHER_TRACING="1", **otlp.environment())
    command_id = _publish(scene, task_id, RECORDED, {"traceparent": TRACEPARENT})
    [result] = scene.wait_results(1, timeout=40, event_type="call.result")
    assert result["body"]["payload"]["recording"]["status"] == "uploaded"
    tree = _wait_trace(otlp, command_id)

    root = _one(tree, "dispatcher.call.execute")
    assert (root.trace_id, root.parent_id) == (CLIENT_TRACE, CLIENT_SPAN)
    assert root.service == "dispatcher"
    assert root.attributes["dispatcher.decision"] == "accepted"
    assert root.attributes["dispatcher.task.id"] == task_id
    assert root.attributes["dispatcher.execution.id"] == result["body"]["payload"]["call_id"]
    steps = [
        "dispatcher.admit",
        "dispatcher.originate",
        "dispatcher.call",
        "dispatcher.upload",
        "dispatcher.result.publish",
    ]
    children = [_one(tree, name) for name in steps]
    assert all(child.parent_id == root.span_id for child in children)
    starts = [child.start_ns for child in children]
    assert starts == sorted(starts), "the steps follow each other"
    assert all(root.start_ns <= c.start_ns <= c.end_ns <= root.end_ns for c in children)
    assert _one(tree, "dispatcher.originate").attributes["dispatcher.originate.dialled"] is True
    upload = _one(tree, "dispatcher.upload")
    assert upload.attributes["dispatcher.upload.status"] == "uploaded"
    deliver = _one(tree, "dispatcher.outbox.deliver")
    assert deliver.parent_id == _one(tree, "dispatcher.result.publish").span_id
    assert deliver.status != 2 and deliver.attributes["dispatcher.outbox.attempt"] == 1
    assert sorted(tree) == sorted([root.name, deliver.name, *steps])
    assert root.kind == CONSUMER and _one(tree, "dispatcher.admit").attributes == {
        k: v for k, v in root.attributes.items() if k != "dispatcher.execution.id"
    }
    assert _one(tree, "dispatcher.result.publish").attributes["dispatcher.outbox.attempts"] == 1
    ends = [child.end_ns for child in children]
    assert all(a <= b for a, b in zip(ends, starts[1:], strict=False)), "none overlaps the next"


def test_without_a_valid_traceparent_a_command_starts_a_trace_and_a_refused_one_ends_there(
    scene: Scenario, otlp: Collector
) -> None:
    task_id = _start(scene, DISPATCHER_TRACING="1", **otlp.environment())
    busy = _publish(scene, task_id, BUSY, None)
    invalid = _publish(scene, task_id, BUSY, {"traceparent": TRACEPARENT.upper()})
    refused = _publish(scene, task_id, BUSY, None, not_after_s=-60)
    scene.wait_results(2, timeout=40, event_type="call.result")

    tree = _wait_trace(otlp, busy)
    root = _one(tree, "dispatcher.call.execute")
    assert root.parent_id == "" and root.trace_id != CLIENT_TRACE
    assert "dispatcher.upload" not in tree  # a busy call leaves no recording
    assert {"dispatcher.call", "dispatcher.result.publish"} <= set(tree)
    other = _one(_wait_trace(otlp, invalid), "dispatcher.call.execute")
    assert other.parent_id == "" and other.trace_id not in (CLIENT_TRACE, root.trace_id)
    alone = _wait_trace(otlp, refused)
    assert sorted(alone) == ["dispatcher.admit", "dispatcher.call.execute"]
    assert _one(alone, "dispatcher.call.execute").attributes["dispatcher.decision"] != "accepted"


def test_tracing_off_exports_nothing_and_never_imports_opentelemetry(
    scene: Scenario, otlp: Collector, tmp_path: Path
) -> None:
    """The D runs a whole call with an `opentelemetry` that fails on import first on its
    path: with tracing off no exporter, tracer or span object can exist in it."""
    blocked = tmp_path / "blocked" / "opentelemetry"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text(f"raise ImportError({BLOCKED!r})\n")
    path = os.pathsep.join(p for p in (str(blocked.parent), os.environ.get("PYTHONPATH")) if p)
    task_id = _start(scene, PYTHONPATH=path, **otlp.environment())
    _publish(scene, task_id, BUSY, {"traceparent": TRACEPARENT})
    [result] = scene.wait_results(1, timeout=40, event_type="call.result")
    assert result["outcome"] == "busy"
    assert scene.stop() == 0  # a D that traced would export its queued spans now
    assert otlp.spans == []
    assert scene.proc is not None and BLOCKED not in scene.proc.text()
