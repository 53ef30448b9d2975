"""Crash recovery with real processes (ARCHITECTURE crash rule, D-CMD-1, D-CMD-4, D-RES-1).

* SIGKILL of the D while calls are live: on restart it reconciles with the cell — live
  calls continue (never hung up, never redialled), calls that ended meanwhile are
  finalized once, recordings are uploaded.
* SIGKILL of the cell while calls are live: the D marks them unknown and keeps their
  occupancy; when the restarted cell (new boot id) confirms they are gone, each is
  finalized once as ``failed`` / ``cell_restarted`` and the partial recording the dead
  cell left on disk is uploaded and verified.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.acceptance.dispatcher.broker import originate_log
from tests.acceptance.dispatcher.harness import Cell, Scenario, s3_env
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq, pytest.mark.s3]

# At time scale 0.5: *1 talks 1 s (real time), *3 talks 19 s, *2 is busy; the answered ones
# are recorded. The callee speaks every 2 s of call time (the agent's silence timeout is 3 s).
LONG_TURNS = [{"text": f"Still here, part {i}.", "at_ms": 2000 * i} for i in range(19)]
SCRIPT = {
    "version": 1,
    "time_scale": 0.5,
    "rules": [
        {
            "match": {"glob": "*1"},
            "outcome": "answered",
            "ring_ms": 400,
            "talk_ms": 2000,
            "turns": ["Hello?"],
        },
        {
            "match": {"glob": "*3"},
            "outcome": "answered",
            "ring_ms": 400,
            "talk_ms": 38000,
            "turns": LONG_TURNS,
        },
        {"match": {"glob": "*2"}, "outcome": "busy", "ring_ms": 100, "recording": False},
    ],
    "default": {"outcome": "no_answer", "ring_ms": 100000, "recording": False},
}
LONG_CALL = {"max_call_duration_ms": 300000}


def cell_calls(cell: Cell, state: str) -> list[dict[str, Any]]:
    try:
        return [c for c in cell.calls() if c["state"] == state]
    except httpx.HTTPError:
        return []


def dialled_once(cell: Cell, call_ids: set[str]) -> None:
    counts = Counter(e["call_id"] for e in originate_log(cell.data) if e["call_id"] in call_ids)
    assert set(counts) == call_ids, "every accepted execution was dialled"
    assert max(counts.values()) == 1, f"dialled twice: {counts.most_common(3)}"


def check_uploaded(s3: Any, rec: dict[str, Any]) -> None:
    body = s3.get_object(Bucket=rec["bucket"], Key=rec["object_key"])["Body"].read()
    assert hashlib.sha256(body).hexdigest() == rec["checksum_sha256"]
    assert len(body) == rec["size_bytes"]


# allowed_targets is a whitelist (D-NOTE-6): every callee these tests dial.
WHITELIST = [f"151000000{n:02d}" for n in (1, 2, 3, 11, 13)] + [
    f"152000000{n:02d}" for n in (2, 3, 13, 23)
]


def test_d_sigkill_live_calls_continue_ended_ones_finalize_once(
    scene: Scenario, s3_client: Any
) -> None:
    s = scene
    s.sip(allowed_targets=WHITELIST)
    s.task("task-k", ring_timeout_ms=10000, **LONG_CALL)
    s.quota()
    env = s3_env(f"it-dkill-{uuid.uuid4().hex[:8]}", deadline_s="30")
    s.start(**env)
    callees = ["15100000001", "15100000011", "15100000003", "15100000013", "15100000002"]
    commands = s.calls("task-k", callees=callees)
    s.wait_results(len(commands), event_type="command.result")
    wait_for(lambda: len(cell_calls(s.cell, "answered")) >= 4, 15, "four calls answered")
    s.kill()  # SIGKILL: no clean shutdown, nothing flushed beyond what was committed
    short_ended = lambda: [c for c in cell_calls(s.cell, "ended") if c["callee"].endswith("1")]  # noqa: E731
    wait_for(lambda: len(short_ended()) == 2, 15, "the short calls ended while the D was down")
    s.start(**env)
    live_after_restart = {c["call_id"] for c in cell_calls(s.cell, "answered")}
    results = s.wait_distinct_results(len(callees), timeout=40, event_type="call.result")
    payloads = {r["body"]["payload"]["callee"]: r["body"]["payload"] for r in results}
    # The SIGKILL may land between a result's confirm and its delivered mark: that result
    # is then delivered twice, as the same event (D-MQ-4), never as a second event.
    assert s.republished_differently() == [], "D-MQ-4: same event_id, same body"
    assert len(payloads) == len(results) == len(callees), "D-RES-1: one event_id per call"
    for callee in ("15100000001", "15100000011", "15100000003", "15100000013"):
        payload = payloads[callee]
        # live calls were not hung up: the callee ended them normally
        assert (payload["outcome"], payload["reason_code"]) == ("answered", None), payload
        assert payload["recording"]["status"] == "uploaded"
        check_uploaded(s3_client, payload["recording"])
    assert payloads["15100000002"]["recording"]["status"] == "not_created"
    assert len(live_after_restart) == 2, "the long calls outlived the D's downtime"
    dialled_once(s.cell, {p["call_id"] for p in payloads.values()})
    status = s.status()
    assert status["executions"]["finalized"] == len(callees)
    assert status["executions"]["unknown"] == 0


def test_cell_sigkill_unknown_then_finalized_once_with_orphans_uploaded(
    scene: Scenario, s3_client: Any
) -> None:
    s = scene
    s.sip(allowed_targets=WHITELIST)
    s.task("task-c", ring_timeout_ms=10000, **LONG_CALL)
    s.quota(max_concurrent_calls=3)
    s.start(**s3_env(f"it-ckill-{uuid.uuid4().hex[:8]}", deadline_s="30"))
    commands = s.calls("task-c", callees=["15200000003", "15200000013", "15200000023"])
    s.wait_results(3, event_type="command.result")
    wait_for(lambda: len(cell_calls(s.cell, "answered")) == 3, 15, "three long calls answered")
    time.sleep(1.5)  # 3 s of call time: the cell has flushed part of each recording
    s.cell.proc.kill()

    # D-CMD-4: the D does not know their fate — unknown, occupancy kept (quota 3 is full).
    wait_for(lambda: s.status()["executions"]["unknown"] == 3, 15, "executions unknown")
    extra = s.calls("task-c", callees=["15200000002"])
    (rejected,) = [
        r for r in s.wait_results(4, event_type="command.result") if r["command_id"] in extra
    ]
    assert rejected["reason_code"] == "tenant_quota_exhausted"
    assert s.results(event_type="call.result") == []

    s.cell.proc.start()  # same data dir: a new boot id, the old calls are gone
    results = s.wait_results(3, timeout=40, event_type="call.result")
    assert s.summary()["duplicates"] == {}
    for result in results:
        payload = result["body"]["payload"]
        assert (payload["outcome"], payload["reason_code"]) == ("failed", "cell_restarted")
        rec = payload["recording"]
        assert rec["status"] == "uploaded", rec  # the partial recording left on disk
        check_uploaded(s3_client, rec)
        assert result["valid"], result["errors"]
    call_ids = {r["body"]["payload"]["call_id"] for r in results}
    dialled_once(s.cell, call_ids)  # never redialled on the new boot
    orphans = httpx.get(f"{s.cell.url}/v1/orphans", timeout=5).json()["orphans"]
    assert not [o for o in orphans if o["call_id"] in call_ids], "orphans deleted once uploaded"
    wait_for(lambda: s.status()["executions"]["finalized"] == 3, 10, "finalized")
    assert len(commands) == 3
