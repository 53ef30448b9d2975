"""Batch originate and batch ack on the real cell: one result per item, same guarantees."""

from __future__ import annotations

import dataclasses
from collections import Counter

import httpx
import pytest

from agentcall.cell.client import (
    AlreadyDialledError,
    CallIdConflictError,
    CallInfo,
    CallNotEndedError,
    CallNotFoundError,
    CellClient,
    CellUnavailableError,
    EventType,
    InvalidPlanError,
)

from .harness import CellProcess
from .helpers import Watch, plan, unique

pytestmark = pytest.mark.integration


async def test_batch_originate_dials_each_plan_once_with_per_item_errors(
    cell: CellClient, cell_process: CellProcess
) -> None:
    """A bad plan fails alone; a repeated plan is idempotent; every call_id is logged once."""
    good = [plan(unique("noans"), ring_timeout_ms=600_000) for _ in range(3)]
    bad = dataclasses.replace(plan(unique("bad")), callee="has space")
    answers = await cell.originate_many([good[0], bad, good[1], good[2], good[0]])
    assert [type(a).__name__ for a in answers] == [
        "CallInfo",
        "InvalidPlanError",
        "CallInfo",
        "CallInfo",
        "CallInfo",
    ]
    bad_answer = answers[1]
    assert isinstance(bad_answer, InvalidPlanError) and bad_answer.field == "callee"
    calls = [a for a in answers if isinstance(a, CallInfo)]
    assert [c.call_id for c in calls] == [good[0].call_id, good[1].call_id, good[2].call_id] + [
        good[0].call_id
    ]
    again = await cell.originate_many(good)  # a retry of the whole batch: same calls
    assert all(isinstance(a, CallInfo) for a in again)
    conflict = await cell.originate_many([dataclasses.replace(good[1], callee="1999")])
    assert isinstance(conflict[0], CallIdConflictError)
    logged = Counter(e["call_id"] for e in cell_process.originate_log())
    assert [logged[p.call_id] for p in good] == [1, 1, 1]
    assert logged[bad.call_id] == 0
    for call in good:
        await cell.hangup(call.call_id)


async def test_batch_ack_per_item_and_never_redial(cell: CellClient) -> None:
    watch = await Watch.open(cell)
    ended = plan(unique("fail"))
    live = plan(unique("noans"), ring_timeout_ms=600_000)
    await cell.originate_many([ended, live])
    await watch.settled(ended.call_id)
    await watch.until(live.call_id, EventType.RINGING)
    results = await cell.ack_many([ended.call_id, live.call_id, unique("never"), ended.call_id])
    assert results[0] is None and results[3] is None  # acked, and idempotent
    assert isinstance(results[1], CallNotEndedError)
    assert isinstance(results[2], CallNotFoundError)
    redial = await cell.originate_many([ended])
    assert isinstance(redial[0], AlreadyDialledError)
    await cell.hangup(live.call_id)
    await watch.settled(live.call_id)
    assert await cell.ack_many([live.call_id]) == [None]
    await watch.aclose()


async def test_batch_envelope_is_validated(cell_process: CellProcess) -> None:
    async with httpx.AsyncClient(base_url=cell_process.url) as http:
        for body in ({}, {"plans": []}, {"plans": {}}, {"plans": [{}], "x": 1}):
            response = await http.post("/v1/calls/batch", json=body)
            assert response.status_code == 400, body
            assert response.json()["error"]["field"] == "plans"
        response = await http.post("/v1/calls/ack", json={"call_ids": [7]})
        assert response.status_code == 200
        assert response.json()["results"][0]["error"]["code"] == "invalid_request"


async def test_unreachable_cell_gives_each_item_the_error() -> None:
    async with CellClient("http://127.0.0.1:9", timeout_s=2) as dead:
        answers = await dead.originate_many([plan(unique("x")), plan(unique("y"))])
        acks = await dead.ack_many(["a", "b"])
    assert all(isinstance(a, CellUnavailableError) for a in answers + acks)
