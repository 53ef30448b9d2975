"""The mock agent's conversation: opening, replies, limits, opt-out and the recording audio."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.cell.agent.config import parse_agent_config
from agentcall.cell.agent.conversation import (
    GAP_MS,
    GOODBYE,
    CalleeTurn,
    EndReason,
    limit_ms,
    plan_conversation,
    render_pcm,
    user_speech_ms,
)
from agentcall.cell.agent.mock import mock_registry, speech_ms
from agentcall.cell.agent.optout import OptOutDetector
from agentcall.cell.audio.synth import peak
from agentcall.cell.domain.model import Role
from tests.support.agent_configs import asr_only, full_ai

TURNS = (CalleeTurn("Hello?"), CalleeTurn("Tell me more."))


async def _plan(config: dict[str, Any], turns: tuple[CalleeTurn, ...] = TURNS, **kw: Any) -> Any:
    kw.setdefault("talk_ms", None)
    kw.setdefault("max_duration_ms", None)
    return await plan_conversation(parse_agent_config(config), mock_registry(), turns, **kw)


async def test_full_ai_opens_then_answers_each_turn_deterministically() -> None:
    plan = await _plan(full_ai())
    roles = [t.role for t in plan.turns]
    assert roles == [Role.AGENT, Role.USER, Role.AGENT, Role.USER, Role.AGENT]
    assert plan.turns[0].text == "Hello, this is a test call."
    assert plan.turns[2].text == "Thank you. You said: Hello?"
    assert plan.turns[4].text == "Thank you. You said: Tell me more."
    assert [t.turn_id for t in plan.turns] == [f"turn-{i}" for i in range(1, 6)]
    assert [t.segment_id for t in plan.turns] == [f"segment-{i}" for i in range(1, 6)]
    assert plan.end_reason is EndReason.CALLEE_HANGUP
    assert plan == await _plan(full_ai())  # deterministic


async def test_turn_timing_follows_speech_lengths() -> None:
    plan = await _plan(full_ai())
    opening, hello = plan.turns[0], plan.turns[1]
    assert (opening.start_ms, opening.end_ms) == (0, speech_ms(opening.text, 1.0))
    assert hello.start_ms == opening.end_ms + GAP_MS
    assert hello.end_ms - hello.start_ms == user_speech_ms("Hello?")
    assert all(a.end_ms <= b.start_ms for a, b in zip(plan.turns, plan.turns[1:], strict=False))
    assert plan.end_ms == plan.turns[-1].end_ms + 1000


async def test_asr_only_transcribes_without_speaking() -> None:
    plan = await _plan(asr_only())
    assert [t.role for t in plan.turns] == [Role.USER, Role.USER]
    assert [t.text for t in plan.turns] == ["Hello?", "Tell me more."]


async def test_max_turns_ends_the_call_after_the_reply() -> None:
    plan = await _plan(full_ai(max_turns=1))
    assert plan.end_reason is EndReason.MAX_TURNS
    assert [t.role for t in plan.turns] == [Role.AGENT, Role.USER, Role.AGENT]
    assert plan.end_ms == plan.turns[-1].end_ms


@pytest.mark.parametrize("make", [full_ai, asr_only])
async def test_silence_timeout_hangs_up(make: Any) -> None:
    turns = (CalleeTurn("Hi", at_ms=500), CalleeTurn("Still there", at_ms=60_000))
    plan = await _plan(make(silence_timeout_ms=2000), turns)
    assert plan.end_reason is EndReason.SILENCE_TIMEOUT
    assert plan.end_ms == plan.turns[-1].end_ms + 2000
    assert "Still there" not in [t.text for t in plan.turns]


async def test_silence_timeout_after_last_turn_before_callee_hangs_up() -> None:
    plan = await _plan(asr_only(silence_timeout_ms=1000), (CalleeTurn("Hi"),), talk_ms=30_000)
    assert plan.end_reason is EndReason.SILENCE_TIMEOUT
    assert plan.end_ms == plan.turns[-1].end_ms + 1000


async def test_talk_ms_makes_the_callee_hang_up_mid_turn() -> None:
    plan = await _plan(asr_only(silence_timeout_ms=None), (CalleeTurn("x" * 100),), talk_ms=2000)
    assert plan.end_reason is EndReason.CALLEE_HANGUP
    assert plan.end_ms == 2000
    assert plan.turns[-1].end_ms == 2000


@pytest.mark.parametrize(
    ("plan_max", "agent_max", "expected"),
    [(5000, 120_000, 5000), (120_000, 4000, 4000), (None, 4000, 4000), (3000, None, 3000)],
)
async def test_max_duration_is_the_smaller_limit_d_cmd_3(
    plan_max: int | None, agent_max: int | None, expected: int
) -> None:
    """D-CMD-3: effective max duration = min(task max_call_duration_ms, agent max_duration_ms)."""
    config = full_ai(max_duration_ms=agent_max, silence_timeout_ms=None)
    assert limit_ms(plan_max, parse_agent_config(config)) == expected
    plan = await _plan(config, talk_ms=600_000, max_duration_ms=plan_max)
    assert plan.end_reason is EndReason.MAX_DURATION
    assert plan.end_ms == expected
    assert all(t.end_ms <= expected for t in plan.turns)


async def test_opt_out_is_detected_and_the_agent_says_goodbye() -> None:
    turns = (CalleeTurn("Please stop calling me"), CalleeTurn("never said"))
    plan = await _plan(full_ai(), turns)
    assert plan.opt_out and plan.opt_out_phrase == "stop calling"
    assert plan.opt_out_at_ms == plan.turns[1].end_ms
    assert plan.turns[-1].text == GOODBYE
    assert plan.end_reason is EndReason.OPT_OUT
    assert "never said" not in [t.text for t in plan.turns]


async def test_opt_out_in_asr_only_ends_without_speech() -> None:
    plan = await _plan(asr_only(), (CalleeTurn("不要再打了"),))
    assert plan.opt_out and plan.end_reason is EndReason.OPT_OUT
    assert [t.role for t in plan.turns] == [Role.USER]


async def test_configured_opt_out_phrases() -> None:
    turns = (CalleeTurn("go away"),)
    plan = await _plan(asr_only(), turns, detector=OptOutDetector.of(["go away"]))
    assert plan.opt_out
    assert not (await _plan(asr_only(), turns)).opt_out


async def test_barge_in_cuts_the_agent_only_when_allowed() -> None:
    turns = (CalleeTurn("Wait!", at_ms=200),)
    allowed = await _plan(full_ai(allow_interrupt=True), turns)
    assert allowed.turns[0].end_ms == 200 and allowed.turns[1].start_ms == 200
    refused = await _plan(full_ai(allow_interrupt=False), turns)
    assert refused.turns[1].start_ms == refused.turns[0].end_ms


async def test_cut_drops_later_turns_and_late_opt_out() -> None:
    plan = await _plan(full_ai(), (CalleeTurn("hello"), CalleeTurn("do not call me")))
    cut = plan.cut(plan.turns[2].start_ms + 10, EndReason.HANGUP_REQUESTED)
    assert cut.end_reason is EndReason.HANGUP_REQUESTED
    assert not cut.opt_out
    assert cut.turns[-1].end_ms <= cut.end_ms
    assert len(cut.turns) == 3
    assert cut.turns[-1].end_ms == cut.end_ms  # the reply in progress is clipped
    assert plan.cut(plan.end_ms + 1, EndReason.HANGUP_REQUESTED) is plan


async def test_rendered_audio_is_non_silent_per_speaker_and_silent_between() -> None:
    plan = await _plan(full_ai())
    pcm = render_pcm(plan, 0, plan.end_ms)
    assert len(pcm) == plan.end_ms * 16
    first, second = plan.turns[0], plan.turns[1]
    assert peak(pcm[first.start_ms * 16 : first.end_ms * 16]) > 1000
    assert peak(pcm[second.start_ms * 16 : second.end_ms * 16]) > 1000
    assert peak(pcm[(first.end_ms + 10) * 16 : (second.start_ms - 10) * 16]) == 0
    halves = render_pcm(plan, 0, 1234) + render_pcm(plan, 1234, plan.end_ms)
    assert halves == pcm  # rendering in pieces gives the same recording
