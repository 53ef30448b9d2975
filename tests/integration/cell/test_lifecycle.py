"""Hang-up, limits, idempotent originate, acknowledgement and listing on the real cell."""

from __future__ import annotations

import asyncio
import subprocess
import wave
from pathlib import Path

import httpx
import pytest

from agentcall.cell.client import (
    AlreadyDialledError,
    CallIdConflictError,
    CallNotEndedError,
    CallNotFoundError,
    CallState,
    CellClient,
    EventType,
    InvalidPlanError,
)
from agentcall.cell.client._models import Plan

from .harness import CELL, CellProcess
from .helpers import Watch, agent, plan, unique

pytestmark = pytest.mark.integration
NO_SILENCE = agent(silence_timeout_ms=None)


async def test_hangup_requested_mid_call(cell: CellClient) -> None:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("long"), agent_config=NO_SILENCE))
    await watch.until(call.call_id, EventType.ANSWERED)
    await asyncio.sleep(0.05)
    await cell.hangup(call.call_id)
    events = await watch.settled(call.call_id)
    await watch.aclose()
    ended = next(e for e in events if e.type == EventType.ENDED).data
    assert (ended["outcome"], ended["reason_code"], ended["cause"]) == (
        "answered",
        "hangup_requested",
        "dispatcher",
    )
    assert 0 < ended["talk_ms"] < 600_000
    recording = events[-1].recording()
    assert recording.duration_ms == ended["talk_ms"] and not recording.partial
    again = await cell.hangup(call.call_id)  # idempotent on an ended call
    assert again.reason_code == "hangup_requested"


async def test_hangup_while_ringing_is_no_answer(cell: CellClient) -> None:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("noans"), ring_timeout_ms=600_000))
    await watch.until(call.call_id, EventType.RINGING)
    await cell.hangup(call.call_id)
    events = await watch.settled(call.call_id)
    await watch.aclose()
    assert events[-1].data["outcome"] == "no_answer"
    assert events[-1].data["reason_code"] == "hangup_requested"


@pytest.mark.parametrize(
    ("plan_max", "agent_max", "expected"), [(5000, 120_000, 5000), (120_000, 4000, 4000)]
)
async def test_max_duration_ends_the_call_d_cmd_3(
    cell: CellClient, plan_max: int, agent_max: int, expected: int
) -> None:
    """D-CMD-3: the effective limit is min(plan max duration, agent max_duration_ms)."""
    config = agent(silence_timeout_ms=None, max_duration_ms=agent_max)
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("long"), agent_config=config, max_duration_ms=plan_max))
    events = await watch.settled(call.call_id)
    await watch.aclose()
    ended = next(e for e in events if e.type == EventType.ENDED).data
    assert (ended["reason_code"], ended["cause"], ended["talk_ms"]) == (
        "max_duration",
        "limit",
        expected,
    )
    with wave.open(events[-1].recording().path, "rb") as w:
        assert w.getnframes() == expected * 8


async def test_same_plan_twice_dials_once_d_cmd_1(
    cell: CellClient, cell_process: CellProcess
) -> None:
    """D-CMD-1: a repeated originate (redelivery, retry) never dials again."""
    p = plan(unique("answer"))
    results = await asyncio.gather(*(cell.originate(p) for _ in range(5)))
    assert {r.call_id for r in results} == {p.call_id}
    with pytest.raises(CallIdConflictError):
        await cell.originate(plan(unique("answer"), call_id=p.call_id))
    entries = [e for e in cell_process.originate_log() if e["call_id"] == p.call_id]
    assert len(entries) == 1 and entries[0]["callee"] == p.callee
    assert entries[0]["dialled"] == "9" + p.callee


async def test_ack_forgets_the_call_and_prunes_its_events(cell: CellClient) -> None:
    watch = await Watch.open(cell)
    p = plan(unique("long"), agent_config=NO_SILENCE)
    await cell.originate(p)
    await watch.until(p.call_id, EventType.ANSWERED)
    with pytest.raises(CallNotEndedError):
        await cell.ack(p.call_id)
    assert p.call_id in {c.call_id for c in await cell.list_calls(CallState.ANSWERED)}
    await cell.hangup(p.call_id)
    events = await watch.settled(p.call_id)
    await watch.aclose()
    assert p.call_id in {c.call_id for c in await cell.list_calls(CallState.ENDED)}
    await cell.ack(p.call_id)
    await cell.ack(p.call_id)  # idempotent
    with pytest.raises(CallNotFoundError):
        await cell.get_call(p.call_id)
    assert p.call_id not in {c.call_id for c in await cell.list_calls()}
    with pytest.raises(AlreadyDialledError):
        await cell.originate(p)
    info = await cell.info()
    replay = cell.events(after=events[0].seq - 1, boot_id=info.boot_id)
    probe = await cell.originate(plan(unique("busy")))
    async with asyncio.timeout(10):
        async for event in replay:
            assert event.call_id != p.call_id, "events of an acked call are pruned"
            if event.call_id == probe.call_id and event.type == EventType.ENDED:
                break
    await replay.aclose()
    orphan = next(o for o in await cell.orphans() if o.call_id == p.call_id)
    assert Path(orphan.path).exists()  # kept for the D until uploaded or deleted
    await cell.delete_orphan(p.call_id)
    assert not Path(orphan.path).exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"callee": "has space"}, "callee"),
        ({"ring_timeout_ms": 0}, "ring_timeout_ms"),
        ({"agent": agent(max_turns=0)}, "agent.conversation.max_turns"),
    ],
)
async def test_invalid_plan_is_refused_and_not_dialled(
    cell: CellClient, cell_process: CellProcess, change: dict[str, object], field: str
) -> None:
    base = plan("answer-x")
    bad = Plan(**{**base.__dict__, **change})  # type: ignore[arg-type]
    with pytest.raises(InvalidPlanError) as info:
        await cell.originate(bad)
    assert info.value.field == field
    assert base.call_id not in {e["call_id"] for e in cell_process.originate_log()}


async def test_unknown_provider_is_refused(cell: CellClient) -> None:
    config = agent()
    config["llm"] = {**config["llm"], "provider_ref": "acme-llm"}
    with pytest.raises(InvalidPlanError) as info:
        await cell.originate(plan("answer-x", agent_config=config))
    assert (info.value.code, info.value.field) == ("unknown_provider", "agent.llm.provider_ref")


async def test_info_health_and_metrics(cell: CellClient, cell_process: CellProcess) -> None:
    info = await cell.info()
    assert info.mode == "sim" and len(info.boot_id) == 32
    assert info.raw["providers"]["llm"] == ["mock"]
    async with httpx.AsyncClient(base_url=cell_process.url) as http:
        assert (await http.get("/healthz")).json()["boot_id"] == info.boot_id
        metrics = (await http.get("/metrics")).text
        bad = await http.post("/v1/calls", content=b"{not json")
    assert "cell_calls_originated_total" in metrics and "cell_calls_in_progress" in metrics
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "body"


def test_a_second_cell_on_the_same_data_dir_refuses_to_start(cell_process: CellProcess) -> None:
    cmd = [str(CELL), "serve", "--data-dir", str(cell_process.data_dir), "--http-port", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "another cell process uses data dir" in done.stderr
    assert (cell_process.data_dir / "cell.url").read_text().strip() == cell_process.url
