"""Answering-machine detection on voice-activity frames (table: greetings of people
and machines, silence, the beep)."""

from __future__ import annotations

import pytest

from agentcall.cell.audio.amd import AmdParams, AmdState, Verdict, amd_step

PARAMS = AmdParams()


def run(pattern: list[tuple[str, int]], beep_at_ms: int | None = None) -> AmdState:
    """Feed ("v"oiced | "s"ilent, ms) stretches; a beep in the frame at ``beep_at_ms``."""
    state, now = AmdState(), 0
    for kind, ms in pattern:
        for _ in range(ms // 20):
            now += 20
            state = amd_step(state, kind == "v", beep_at_ms == now, PARAMS)
    return state


@pytest.mark.parametrize(
    ("name", "pattern", "verdict"),
    [
        ("hello? then silence", [("s", 400), ("v", 500), ("s", 1000)], Verdict.HUMAN),
        ("hello, who is it?", [("v", 400), ("s", 150), ("v", 700), ("s", 900)], Verdict.HUMAN),
        ("a 6 s greeting", [("s", 300), ("v", 6000)], Verdict.MACHINE),
        (
            "greeting with short pauses",
            [("v", 500), ("s", 300), ("v", 600), ("s", 400), ("v", 900), ("s", 200)],
            Verdict.MACHINE,
        ),
        ("many short words", [("v", 150), ("s", 100)] * 6, Verdict.MACHINE),
        ("nobody speaks", [("s", 3000)], Verdict.UNKNOWN),
        ("still pending", [("s", 300), ("v", 300)], Verdict.PENDING),
        ("a click is not a greeting", [("v", 40), ("s", 3000)], Verdict.UNKNOWN),
    ],
)
def test_greeting_cadence(name: str, pattern: list[tuple[str, int]], verdict: Verdict) -> None:
    assert run(pattern).verdict is verdict, name


def test_a_beep_means_a_machine_even_after_a_short_greeting() -> None:
    state = run([("v", 600), ("s", 1000), ("s", 600)], beep_at_ms=2000)
    assert (state.verdict, state.why) == (Verdict.MACHINE, "voicemail beep")


def test_no_verdict_after_the_analysis_window() -> None:
    params = AmdParams(total_ms=1000, initial_silence_ms=5000)
    state = AmdState()
    for _ in range(60):
        state = amd_step(state, False, False, params)
    assert state.verdict is Verdict.UNKNOWN and "1000 ms" in state.why


def test_a_verdict_is_final() -> None:
    human = run([("v", 500), ("s", 1000)])
    assert amd_step(human, True, False, PARAMS) == human
