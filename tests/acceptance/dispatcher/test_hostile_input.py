"""No message on any queue stops the Dispatcher (D-MQ-5), with the real D, the real broker
and the real Mock SaaS.

Finding: a 10 KB body of 5,000 nested ``[`` published to a task queue raised
RecursionError in the intake loop; the D exited, and after every restart read the same
message and died again. The same body on the control queue made the control consumer
requeue it for ever, so no control was applied any more. Now such a body is recorded
redacted and dead-lettered, and the next command is processed.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.acceptance.dispatcher.broker import (
    Publisher,
    drop_dead_letters,
    message_count,
    take_dead_letters,
)
from tests.acceptance.dispatcher.harness import Scenario, unique
from tests.support.fuzzing import FUZZ, FUZZ_EXAMPLES
from tests.support.hostile import hostile_bodies
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]


def nested(marker: str) -> str:
    """5,000 nested ``[`` (10 KB), then a marker to find its dead letter."""
    return "[" * 5000 + "]" * 5000 + " " + marker


def healthy(s: Scenario) -> bool:
    assert s.proc is not None and s.proc.alive, f"the D exited:\n{s.log()[-3000:]}"
    base = s.status_url.removesuffix("/status")
    return httpx.get(f"{base}/healthz", timeout=5).status_code == 200


def test_nested_body_on_a_task_queue_is_dead_lettered_and_the_next_command_runs_d_mq_5(
    scenario: Scenario,
) -> None:
    s = scenario
    s.sip()
    s.task("poison")
    s.quota()
    s.start()
    marker = unique("nested")
    s.raw("poison", nested(marker))
    [command_id] = s.calls("poison", callees=["15000000001"])
    [result] = s.wait_results(1, timeout=20, event_type="command.result")
    assert result["command_id"] == command_id and result["valid"]
    assert len(wait_for(lambda: take_dead_letters(marker), 10, "the dead letter")) == 1
    status = s.status()
    assert [e["reason"] for e in status["rejected_inputs"]["latest"]] == ["invalid_json"]
    assert status["commands"]["dead_lettered"] == 1
    assert marker not in json.dumps(status), "redacted: no payload"
    assert healthy(s)
    assert message_count(f"agent-call.d.{s.d}.task.poison.v3") == 0


def test_nested_body_on_the_control_queue_is_dead_lettered_and_controls_go_on_d_mq_5(
    scenario: Scenario,
) -> None:
    s = scenario
    s.sip()
    s.task("ctl")
    s.quota()
    s.start()
    marker = unique("nested")
    body = {"target": "control", "body": nested(marker)}
    s.saas.admin("POST", f"/dispatchers/{s.d}/faults/raw", body)
    s.saas.admin("POST", f"/dispatchers/{s.d}/tasks/ctl/status", {"status": "paused"})
    [receipt] = s.wait_results(1, timeout=20, event_type="command.result", action="pause")
    assert receipt["valid"] and receipt["status"] == "applied", receipt
    assert len(wait_for(lambda: take_dead_letters(marker), 10, "the dead letter")) == 1
    assert s.status()["control"]["dead_lettered"] == 1
    assert healthy(s)
    assert message_count(f"agent-call.d.{s.d}.control.v3") == 0


PROPERTIES = st.fixed_dictionaries(
    {},
    optional={
        "content_type": st.sampled_from(["application/json", "text/plain", "x/unknown"]),
        "content_encoding": st.sampled_from(["gzip", "utf-16", "identity"]),
        "headers": st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=3),
    },
)


# Each generated case is a burst of 10..30 bodies, so FUZZ_EXAMPLES / 20 cases publish
# about FUZZ_EXAMPLES bodies (200 in make test, 10,000 in make fuzz) through the broker.
BURSTS = settings(FUZZ, max_examples=max(10, FUZZ_EXAMPLES // 20))


@pytest.mark.fuzz
@pytest.mark.timeout(max(300, FUZZ_EXAMPLES // 5))
def test_fuzz_task_queue_survives_and_dead_letters_every_hostile_body_d_mq_5(
    scenario: Scenario,
) -> None:
    """Generated bodies (any depth, bytes, encoding, content type) straight onto the D's
    task queue through the broker, in bursts: the D stays up, records and dead-letters
    every one, then decides a valid command as usual."""
    s = scenario
    s.sip()
    s.task("fuzz")
    s.quota()
    s.start()
    queue = f"agent-call.d.{s.d}.task.fuzz.v3"
    publisher = Publisher()
    sent: list[bytes] = []

    @BURSTS
    @given(bodies=st.lists(hostile_bodies(), min_size=10, max_size=30), properties=PROPERTIES)
    def publish(bodies: list[bytes], properties: dict[str, object]) -> None:
        publisher.publish(f"d.{s.d}.task.fuzz.in", bodies, properties)
        sent.extend(bodies)
        assert s.proc is not None and s.proc.alive, s.log()[-3000:]

    try:
        publish()
        total = len(sent)
        wait_for(
            lambda: s.status()["rejected_inputs"]["count"] >= total,
            60 + total / 50,
            f"{total} bodies recorded",
        )
        status = s.status()
        assert status["rejected_inputs"]["count"] == total
        assert status["commands"]["dead_lettered"] == total
        [command_id] = s.calls("fuzz", callees=["15000000001"])
        [result] = s.wait_results(1, timeout=30, event_type="command.result")
        assert result["command_id"] == command_id
        assert healthy(s)
        assert message_count(queue) == 0
    finally:
        publisher.close()
        removed = drop_dead_letters(queue)
    assert removed == total, "every body was dead-lettered"
