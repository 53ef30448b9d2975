"""Readiness is decided from the status snapshot alone: one row per cause, and the HTTP
answers built on it (``/readyz`` 503 with the causes, ``/healthz`` unaffected)."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from agentcall.dispatcher.readiness import BROKER, CELL, CHECKS, DISCOVERY, SIP, STATE, readiness
from agentcall.dispatcher.web.app import build_app

pytestmark = pytest.mark.unit

READY: dict[str, Any] = {
    "admission": {"open": True, "why_closed": {}},
    "discovery": {"caught_up": True, "last_error": None},
    "amqp": {"connected": True},
    "calls": {"cell_boot_id": "boot-1", "cell_reachable": True},
    "last_errors": [],
    "state_file": {"intact": True, "problem": None},
}


def changed(**parts: Any) -> dict[str, Any]:
    s = copy.deepcopy(READY)
    for path, value in parts.items():
        section, _, key = path.partition("__")
        s[section][key] = value
    return s


CASES = [
    # (name, snapshot, causes, a word of each detail)
    ("everything up", READY, [], []),
    ("broker gone", changed(amqp__connected=False), [BROKER], ["AMQP"]),
    (
        "no verified SIP snapshot yet (D-NOTE-2)",
        changed(admission__why_closed={"sip": "no verified SIP snapshot yet: HTTP 503"}),
        [SIP],
        ["HTTP 503"],
    ),
    (
        "the SIP read fails (D-NOTE-2)",
        changed(admission__why_closed={"saas.sip": "SIP read failing since 12:00"}),
        [SIP],
        ["failing"],
    ),
    (
        "the cell does not carry the snapshot (D-NOTE-9)",
        changed(admission__why_closed={"cell_identity": "cell reports cell_id 'x'"}),
        [SIP],
        ["cell_id"],
    ),
    (
        "discovery behind after an error (D-DISC-9)",
        changed(discovery__caught_up=False, discovery__last_error="discovery: HTTP 503"),
        [DISCOVERY],
        ["HTTP 503"],
    ),
    (
        "no empty page since start (D-DISC-6)",
        changed(discovery__caught_up=False),
        [DISCOVERY],
        ["since start"],
    ),
    ("cell away", changed(calls__cell_reachable=False), [CELL], ["cell"]),
    (
        "the state file was deleted under the D",
        changed(state_file__intact=False, state_file__problem="the state file was deleted"),
        [STATE],
        ["deleted"],
    ),
    (
        "a closed task barrier is not a readiness matter",
        changed(admission__why_closed={"discovery.page": "x"}, admission__open=False),
        [],
        [],
    ),
]


@pytest.mark.parametrize(("name", "snapshot", "causes", "words"), CASES, ids=[c[0] for c in CASES])
def test_each_cause_alone(
    name: str, snapshot: dict[str, Any], causes: list[str], words: list[str]
) -> None:
    verdict = readiness(snapshot)
    assert verdict["ready"] is (not causes)
    assert [c["cause"] for c in verdict["causes"]] == causes
    for cause, word in zip(verdict["causes"], words, strict=True):
        assert word in cause["detail"]


def test_all_causes_at_once_in_a_fixed_order() -> None:
    s = changed(amqp__connected=False, discovery__caught_up=False, calls__cell_reachable=False)
    s["admission"]["why_closed"] = {"sip": "no verified SIP snapshot yet"}
    s["last_errors"] = [{"source": "amqp", "error": "connection refused"}]
    s["state_file"] = {"intact": False, "problem": "the state file was replaced"}
    causes = readiness(s)["causes"]
    assert [c["cause"] for c in causes] == [name for name, _ in CHECKS]
    assert causes[0]["detail"] == "no AMQP connection: connection refused"


@pytest.mark.parametrize(
    ("snapshot", "code"), [(READY, 200), (changed(amqp__connected=False), 503)]
)
async def test_readyz_answers_the_verdict_and_healthz_stays_200(
    snapshot: dict[str, Any], code: int
) -> None:
    async def status() -> dict[str, Any]:
        return {**snapshot, "readiness": readiness(snapshot)}

    transport = httpx.ASGITransport(app=build_app(status, lambda: True))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        ready, live = await client.get("/readyz"), await client.get("/healthz")
    assert ready.status_code == code and ready.json() == readiness(snapshot)
    assert live.status_code == 200
