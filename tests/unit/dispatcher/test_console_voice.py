"""The calls panel's voice stages: each reply's stage timings the cell reported in the call's
``quality`` (agentcall.dispatcher.console.voice), shaped per turn and rendered in the last
results table."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agentcall.dispatcher.console.pages import environment
from agentcall.dispatcher.console.panels import calls_panel
from agentcall.dispatcher.console.voice import STAGES, greeting, voice_turns

NOW = datetime(2026, 9, 21, 8, 0, tzinfo=UTC)
QUALITY = {
    "voice_stages_ms": [
        {
            "vad_end_of_turn": 600,
            "asr_final": 12,
            "llm_first_token": 310,
            "tts_first_audio": 140,
            "first_rtp_packet": 9,
            "reply": 1071,
        },
        {"vad_end_of_turn": 600, "tts_first_audio": 80, "first_rtp_packet": 11, "reply": 691},
    ],
    "greeting_ms": {"first_audio": 35, "first_packet": 41},
}


def test_each_reply_is_a_turn_with_its_stages_in_the_order_they_happen() -> None:
    assert [name for name, _ in STAGES] == [
        "vad_end_of_turn",
        "asr_final",
        "llm_first_token",
        "tts_first_audio",
        "first_rtp_packet",
    ]
    assert voice_turns(QUALITY) == [
        {"turn": 1, "stages": [600, 12, 310, 140, 9], "reply": 1071},
        {"turn": 2, "stages": [600, None, None, 80, 11], "reply": 691},
    ]
    assert greeting(QUALITY) == 41


@pytest.mark.parametrize(
    "quality",
    [
        None,
        {},
        {"voice_stages_ms": "fast"},
        {"voice_stages_ms": [{"reply": "1 s"}, 7], "greeting_ms": {"first_packet": -1}},
        {"greeting_ms": [41]},
    ],
)
def test_figures_that_are_not_milliseconds_are_left_out(quality: Any) -> None:
    turns = voice_turns(quality)
    assert all(t["reply"] is None and set(t["stages"]) == {None} for t in turns)
    assert greeting(quality) is None


def result(call_id: str, quality: Any) -> dict[str, Any]:
    return {
        "call_id": call_id,
        "task_id": "task-1",
        "finalized_at": NOW,
        "outcome": "answered",
        "reason_code": None,
        "duration_s": 12.0,
        "transcript": [],
        "opt_out": False,
        "recording": {"status": "none", "object_key": None, "error_code": None},
        "quality": quality,
    }


def test_the_results_table_shows_each_turn_and_the_greeting() -> None:
    panel = calls_panel([], [result("c-sip", QUALITY), result("c-sim", None)], NOW)
    html = environment().get_template("calls.html").render(calls={**panel, "now": NOW})
    details = html.split('<details id="v-c-sip">', 1)[1].split("</details>", 1)[0]
    assert "<summary>2 replies, greeting 41 ms</summary>" in details
    assert all(f"<th>{label}</th>" in details for _, label in STAGES)
    first = details.split('<tr data-turn="1">', 1)[1].split("</tr>", 1)[0]
    assert '<td class="num" data-stage="llm_first_token">310</td>' in first
    assert '<td class="num reply">1071</td>' in first
    second = details.split('<tr data-turn="2">', 1)[1].split("</tr>", 1)[0]
    assert '<td class="num" data-stage="asr_final"></td>' in second
    assert 'id="v-c-sim"' not in html  # a call without voice figures: a dash
