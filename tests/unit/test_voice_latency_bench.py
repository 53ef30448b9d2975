"""bench/voice_latency.py gives every turn of a run a reply (its agent has no max_turns)
and says why a turn got none: the agent ended the conversation, or the media clock
starved, or the agent did not answer; its runs are interleaved in rounds."""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Any

import pytest
from bench.voice_latency import MediaClock, agent_config, runs_of, why_lost

pytestmark = pytest.mark.unit


def test_the_bench_agent_answers_every_turn_of_a_long_run() -> None:
    assert agent_config().conversation.max_turns is None


@pytest.mark.parametrize(
    ("finished", "late_s", "reason"),
    [
        ("max_turns", 0.0, "the agent ended the conversation (max_turns)"),
        (None, 0.9, "starved: the media clock ran up to 900 ms late"),
        (None, 0.05, "the agent did not answer (media clock at most 50 ms late)"),
    ],
)
def test_a_turn_without_a_reply_says_why(finished: str | None, late_s: float, reason: str) -> None:
    agent: Any = SimpleNamespace(finished=finished)
    clock: Any = SimpleNamespace(max_late_s=late_s)
    assert why_lost(agent, clock) == reason


async def test_the_media_clock_records_how_late_it_ticked() -> None:
    class Agent:
        def next_outbound(self) -> None:
            return None

        def on_inbound(self, frame: bytes) -> None:
            return None

    clock = MediaClock(Agent())  # type: ignore[arg-type]
    clock.due -= 0.3  # the loop was busy for 300 ms
    await clock.tick(b"")
    assert clock.max_late_s >= 0.29


def test_the_headline_run_comes_first_and_the_baseline_last() -> None:
    args = argparse.Namespace(
        eou_ms=[600, 500], headline_eou=500, turns=50, old_turns=20, baseline_turns=10
    )
    runs = runs_of(args)
    assert [r.name for r in runs] == [
        "preemptive, eou 500 ms",
        "preemptive, eou 600 ms",
        "streamed, eou 500 ms",
        "whole reply, eou 500 ms",
    ]
    assert runs[-1].whole and not runs[-2].preemptive and runs[0].preemptive
