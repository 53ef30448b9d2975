"""Chaos: a 520-command campaign while the D is SIGKILLed at random moments and the cell once.

Real processes throughout (mocksaas, RabbitMQ, the D, a time-scaled sim cell, SeaweedFS).
Asserted at the end (crash rule, D-CMD-1, D-CMD-3, D-RES-1, D-REC-2, D-MQ-4):

* the cell's originate log never holds a call_id, a command or a callee twice;
* every command has exactly one command.result and every accepted one exactly one
  distinct call.result event_id at the SaaS (republishes keep their event_id);
* every recording is closed — uploaded ones are in the bucket with their size and
  SHA-256, the others carry a D-REC-2 error code — no later than its deadline;
* no outbox row is lost: every row of the D's outbox is delivered and received.

``CHAOS_SEED`` replays a run (the seed is printed on failure).
"""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.acceptance.dispatcher.broker import originate_log
from tests.acceptance.dispatcher.harness import Cell, Scenario, s3_env
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq, pytest.mark.s3]

TOTAL = 520
TASKS = ("chaos-a", "chaos-b", "chaos-c", "chaos-d")
D_KILLS = 5
TALK = [{"text": f"Part {i}, still listening.", "at_ms": 2000 * i} for i in range(10)]
# The last digit of the callee decides the call (time scale 0.01: 1 s of call = 10 ms).
SCRIPT = {
    "version": 1,
    "time_scale": 0.01,
    "rules": [
        {"match": {"glob": "*[0-2]"}, "outcome": "answered", "ring_ms": 800, "turns": ["Hello?"]},
        {"match": {"glob": "*3"}, "outcome": "answered", "ring_ms": 800, "turns": TALK},
        {
            "match": {"glob": "*4"},
            "outcome": "answered",
            "ring_ms": 800,
            "turns": ["Hi."],
            "recording": False,
        },
        {"match": {"glob": "*5"}, "outcome": "busy", "ring_ms": 300},
        {"match": {"glob": "*6"}, "outcome": "no_answer"},
        {"match": {"glob": "*7"}, "outcome": "rejected", "ring_ms": 1500},
        {"match": {"glob": "*8"}, "outcome": "failed", "ring_ms": 200, "reason_code": "sip_503"},
        {
            "match": {"glob": "*9"},
            "outcome": "answered",
            "ring_ms": 800,
            "turns": ["Who is this?", "Please stop calling me."],
        },
    ],
    "default": {"outcome": "no_answer"},
}
ERROR_CODES = {
    "upload_authorization_failed",
    "upload_authorization_expired",
    "upload_failed",
    "upload_timeout",
    "deadline_exceeded",
    "checksum_mismatch",
}


def distinct(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """By event_id: a republished result is the same event (D-RES-1)."""
    return {r["event_id"]: r for r in results}


def campaign_callees(t: int, half: int) -> list[str]:
    return [f"1{t}{half}{n:08d}" for n in range(TOTAL // 2 // len(TASKS))]


def whitelist() -> list[str]:
    """Every callee of the campaign: ``allowed_targets`` allows nobody else (D-NOTE-6)."""
    return [c for t in range(len(TASKS)) for half in (0, 1) for c in campaign_callees(t, half)]


class Campaign:
    """Commands in two halves; the D dies ``D_KILLS`` times after a random uptime, the
    cell once at a random moment in between; each is restarted at once."""

    def __init__(self, s: Scenario, rng: random.Random, env: dict[str, str]) -> None:
        self.s, self.rng, self.env = s, rng, env
        self.commands: dict[str, str] = {}  # command_id → callee
        self.kills: list[str] = []
        self.t0 = time.monotonic()

    def note(self, what: str) -> None:
        self.kills.append(f"{what} at {time.monotonic() - self.t0:.1f} s")

    def publish(self, half: int) -> None:
        for t, task_id in enumerate(TASKS):
            callees = campaign_callees(t, half)
            ids = self.s.calls(task_id, callees=callees)
            self.commands.update(zip(ids, callees, strict=True))

    def kill_d(self) -> None:
        time.sleep(self.rng.uniform(1.0, 3.5))  # the D works for a while, then dies
        self.s.kill()
        self.note("D SIGKILL")
        self.s.start(wait_open=False, **self.env)

    def kill_cell(self) -> None:
        time.sleep(self.rng.uniform(0.2, 1.5))
        self.s.cell.proc.kill()
        self.note("cell SIGKILL")
        self.s.cell.start()

    def run(self) -> None:
        self.publish(0)
        cell_after = self.rng.randrange(1, D_KILLS)
        for kill in range(D_KILLS):
            if kill == 2:
                self.publish(1)
            self.kill_d()
            if kill == cell_after:
                self.kill_cell()


@pytest.mark.timeout(300)
def test_chaos_campaign_d_and_cell_sigkills(scene: Scenario, s3_client: Any) -> None:
    seed = int(os.environ.get("CHAOS_SEED") or random.randrange(2**32))
    rng = random.Random(seed)
    s = scene
    prefix = f"it-chaos-{uuid.uuid4().hex[:8]}"
    env = s3_env(prefix, deadline_s="60", sweep_s="0.3", DISPATCHER_PREFETCH="200")
    s.sip(max_concurrent_calls=1000, allowed_targets=whitelist())  # D-NOTE-6
    for task_id in TASKS:
        s.task(task_id, ring_timeout_ms=3000, max_concurrent_calls=1000)
    s.quota(max_concurrent_calls=4000)
    s.start(**env)
    campaign = Campaign(s, rng, env)
    started = time.monotonic()
    try:
        campaign.run()
        print(f"kills: {campaign.kills}", flush=True)
        total = len(campaign.commands)
        assert total >= 500 and len(campaign.kills) == D_KILLS + 1
        settle(s, total)
        commands = {
            r["command_id"]: r for r in distinct(s.results(event_type="command.result")).values()
        }
        accepted = {r["command_id"] for r in commands.values() if r["status"] == "accepted"}
        calls = distinct(s.results(event_type="call.result"))
        elapsed = time.monotonic() - started
        wait_for(lambda: s.cell.calls() == [], 20, "every finished call acknowledged to the cell")
        s.stop()  # clean stop: the outbox file is complete for the last check
        check_commands(commands, campaign)
        check_dialled(s.cell, campaign, accepted)
        check_calls(calls, accepted)
        check_recordings(calls, s3_client)
        check_state(s, calls, commands)
    except AssertionError as exc:
        raise AssertionError(f"CHAOS_SEED={seed} kills={campaign.kills}: {exc}") from exc
    print(f"campaign and settling took {elapsed:.0f} s", flush=True)


def settle(s: Scenario, total: int, timeout: float = 90.0) -> None:
    """Until every command has its result and every accepted one its call.result."""

    def done() -> bool:
        summary = s.summary()
        by_type, by_status = summary["by_event_type"], summary["by_status"]
        answered = by_type.get("command.result", 0)
        accepted = by_status.get("call.execute:accepted", 0)
        return answered >= total and by_type.get("call.result", 0) >= accepted

    deadline = time.monotonic() + timeout
    print(f"settling: {s.summary()['by_event_type']}", flush=True)
    while not done():
        assert time.monotonic() < deadline, f"not settled in {timeout} s: {s.summary()}"
        time.sleep(0.5)


def check_commands(commands: dict[str, dict[str, Any]], campaign: Campaign) -> None:
    """D-CMD-1/3: one command.result per command (redeliveries keep its event_id)."""
    assert set(commands) == set(campaign.commands)
    per_command = Counter(r["command_id"] for r in commands.values())
    assert max(per_command.values()) == 1
    assert all(r["valid"] for r in commands.values())


def check_dialled(cell: Cell, campaign: Campaign, accepted: set[str]) -> None:
    """Crash rule: nothing dialled twice — no call_id, no command, no callee."""
    log = originate_log(cell.data)
    for key, values in {
        "call_id": [e["call_id"] for e in log],
        "command_id": [e["tags"]["command_id"] for e in log],
        "callee": [e["callee"] for e in log],
    }.items():
        twice = [v for v, n in Counter(values).items() if n > 1]
        assert not twice, f"dialled twice ({key}): {twice[:5]}"
    dialled = {e["tags"]["command_id"] for e in log}
    assert dialled <= accepted, "only accepted commands are dialled"


def check_calls(calls: dict[str, dict[str, Any]], accepted: set[str]) -> None:
    """D-RES-1: exactly one distinct call.result event_id per accepted command."""
    sources = Counter(r["body"]["payload"]["source_command_id"] for r in calls.values())
    assert set(sources) == accepted
    assert max(sources.values()) == 1, [c for c, n in sources.items() if n > 1][:5]
    invalid = [r["errors"] for r in calls.values() if not r["valid"]]
    assert not invalid, invalid[:3]
    outcomes = Counter(r["body"]["payload"]["outcome"] for r in calls.values())
    assert {"answered", "busy", "no_answer", "rejected", "failed"} <= set(outcomes), outcomes


def check_recordings(calls: dict[str, dict[str, Any]], s3: Any) -> None:
    """D-REC-2: every recording closed by its rule; uploaded ones verified in the bucket."""
    statuses: Counter[str] = Counter()
    uploaded = []
    for result in calls.values():
        payload = result["body"]["payload"]
        rec = payload["recording"]
        recorded = payload["outcome"] == "answered" and not payload["callee"].endswith("4")
        if rec["status"] == "uploaded":
            uploaded.append(rec)
        elif rec["status"] == "unavailable":
            assert rec["error_code"] in ERROR_CODES, payload
        else:
            assert not recorded, payload  # a recording was made: never "not created"
        statuses[f"{payload['outcome']}/{payload['reason_code']}/{rec['status']}"] += 1
    print(f"results: {dict(sorted(statuses.items()))}", flush=True)
    assert len(uploaded) > 100, statuses
    # Only PUTs cut by the cell's SIGKILL (at most 16 run at once) may end unavailable
    # (never retried: checksum_mismatch / upload_timeout / upload_failed). A grant whose
    # hand-over a SIGKILL of the D cut is handed over again, never re-issued (D-NOTE-7).
    unavailable = sum(n for key, n in statuses.items() if key.endswith("/unavailable"))
    assert unavailable <= 16, statuses
    for rec in uploaded:
        head = s3.head_object(Bucket=rec["bucket"], Key=rec["object_key"])
        assert head["ContentLength"] == rec["size_bytes"], rec["object_key"]
    for rec in random.sample(uploaded, min(15, len(uploaded))):
        body = s3.get_object(Bucket=rec["bucket"], Key=rec["object_key"])["Body"].read()
        assert hashlib.sha256(body).hexdigest() == rec["checksum_sha256"]


def check_state(
    s: Scenario, calls: dict[str, dict[str, Any]], commands: dict[str, dict[str, Any]]
) -> None:
    """D-MQ-4 / D-RES-1: no outbox row lost; every recording closed by its deadline."""
    db = s.workdir / f"d-{s.d[:8]}.sqlite"
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT event_id, state FROM outbox").fetchall()
        open_recs = conn.execute(
            "SELECT count(*) FROM recordings WHERE state NOT IN ('uploaded','unavailable')"
        ).fetchone()[0]
        closings = conn.execute("SELECT closed_at, deadline_at FROM recordings").fetchall()
        states = dict(conn.execute("SELECT state, count(*) FROM executions GROUP BY state"))
    assert Counter(state for _, state in rows) == {"delivered": len(rows)}
    received = set(calls) | {r["event_id"] for r in commands.values()}
    assert {e for e, _ in rows} == received, "every outbox row received, nothing else"
    assert open_recs == 0
    for closed_at, deadline_at in closings:
        closed, deadline = datetime.fromisoformat(closed_at), datetime.fromisoformat(deadline_at)
        assert closed <= deadline + timedelta(seconds=3), (closed_at, deadline_at)
    assert set(states) == {"finalized"}, states
