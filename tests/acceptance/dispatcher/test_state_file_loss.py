"""The state file deleted under a running D, with real processes (D-CMD-1, D-MQ-4, D-RES-1).

A campaign of 200 commands; mid-campaign the D's state database is deleted (with its WAL
and shared-memory files), the D is SIGKILLed, restarted, and the SaaS resends every command
it has no call result for. What must hold: the D notices the loss at once, stops
consuming and acknowledges nothing more; its last state is rescued beside the lost path;
a restart refuses the missing file (no silent empty state) until told; told (the rescued
copy restored with ``dispatcher init-state --restore``), it starts, the inbox dedupes the
resent commands, and in the end every command has exactly one call.result and was dialled
exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from agentcall.dispatcher.store.db import rescued_copies
from tests.acceptance.dispatcher.broker import originate_log
from tests.acceptance.dispatcher.harness import BIN, Scenario, execute_body
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]

# Callees ending in 1 talk for 4 s (still live when the file goes), the others are busy.
SCRIPT = {
    "version": 1,
    "rules": [
        {
            "match": {"glob": "*1"},
            "outcome": "answered",
            "ring_ms": 200,
            "talk_ms": 4000,
            "turns": ["Hello?"],
            "recording": False,
        },
    ],
    "default": {"outcome": "busy", "ring_ms": 100, "recording": False},
}
CALLEES = [f"1530000{n:04d}" for n in range(200)]  # 20 end in 1: long calls
TASK = "task-loss"


def state_files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def call_results_by_command(s: Scenario) -> dict[str, set[str]]:
    """command_id -> the distinct event_ids of its call.results."""
    found: dict[str, set[str]] = defaultdict(set)
    for result in s.results(event_type="call.result"):
        payload = result["body"]["payload"]
        found[payload["source_command_id"]].add(result["event_id"])
    return found


def log_events(s: Scenario) -> list[dict[str, Any]]:
    events = []
    for line in s.log().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def resend_until_answered(
    s: Scenario, task: str, sent: list[str], unanswered: Iterable[str], timeout: float
) -> dict[str, set[str]]:
    """The SaaS resends each `unanswered` command (the ids of `sent`, one a callee of CALLEES in
    order); wait until every command has a call result, and return them by command id."""
    callee_of = dict(zip(sent, CALLEES, strict=True))
    for command_id in unanswered:
        s.raw(task, execute_body(s.d, task, callee_of[command_id], command_id=command_id))

    def every_command_answered() -> dict[str, set[str]] | None:
        found = call_results_by_command(s)
        return found if len(found) >= len(CALLEES) else None

    return wait_for(every_command_answered, timeout, "a call result for every command")


def test_a_deleted_state_file_loses_no_result_and_dials_nothing_twice(scene: Scenario) -> None:
    s = scene
    s.sip(allowed_targets=CALLEES, max_concurrent_calls=1000)  # trunk room for all
    s.task(TASK, ring_timeout_ms=10000, max_concurrent_calls=1000)
    s.quota(max_concurrent_calls=1000)
    s.start()
    state = Path(s.env()["DISPATCHER_STATE_DB"])
    first = s.calls(TASK, callees=CALLEES[:150])
    s.wait_results(150, timeout=60, event_type="command.result")
    wait_for(lambda: len(call_results_by_command(s)) >= 50, 30, "the first call results")

    for path in state_files(state):  # the operator's `rm d.sqlite*`, mid-campaign
        path.unlink(missing_ok=True)
    second = s.calls(TASK, callees=CALLEES[150:])  # published while the D loses its file
    rescued = wait_for(lambda: rescued_copies(state), 10, "the rescued copy")
    s.kill()  # SIGKILL (a no-op if it already stopped itself)
    assert s.proc is not None and s.proc.proc is not None
    assert s.proc.proc.returncode != 0
    unanswered = [c for c in first + second if c not in call_results_by_command(s)]
    assert unanswered, "the loss happened mid-campaign"
    lost = [e for e in log_events(s) if e.get("msg") == "state.lost"]
    assert len(lost) <= 1, "one line says the file is lost"
    assert [e for e in log_events(s) if e.get("msg") == "loop.failed"] == [], "and only one"

    # Restarted as systemd would: the missing file is refused, at once, naming the copy.
    refused = subprocess.run(
        [str(BIN / "dispatcher"), "run"],
        env={**os.environ, **s.env()},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert f"init-state --restore {rescued[-1]}" in refused.stderr
    assert not state.exists(), "no empty state file was created"

    # Told: the rescued copy goes back, the D starts on it.
    s.init_state(s.env(), "--restore", str(rescued[-1]))
    s.start()
    results = resend_until_answered(s, TASK, first + second, unanswered, 40)
    assert set(results) == set(first + second), "0 results lost"
    assert [c for c, events in results.items() if len(events) != 1] == [], "D-RES-1"
    assert s.republished_differently() == [], "D-MQ-4: a republish is the same event"
    dials = Counter(e["tags"]["command_id"] for e in originate_log(s.cell.data))
    assert set(dials) == set(first + second)
    assert [c for c, n in dials.items() if n > 1] == [], "0 second dials"
