"""A call's voice reply timings as the console's calls panel shows them (pure).

The cell reports, in an answered SIP call's ``quality`` (docs/cell-sip.md), each agent
reply's stages in milliseconds (``voice_stages_ms``: VAD end of turn, ASR final, LLM first
token, TTS first audio, first RTP packet, and ``reply``, the end of the callee's speech to
the reply's first packet) and the opening line's ``greeting_ms`` after the answer. The
panel shows them per turn, in the order they happen; a stage a reply did not have (an
opt-out goodbye has no LLM token) is left blank, and anything that is not a whole number of
milliseconds is ignored (the figures come from another process).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STAGES = (
    ("vad_end_of_turn", "VAD end of turn"),
    ("asr_final", "ASR final"),
    ("llm_first_token", "LLM first token"),
    ("tts_first_audio", "TTS first audio"),
    ("first_rtp_packet", "first RTP packet"),
)
"""The cell's stage names (cell_voice_stage_seconds{stage}) and their column headings."""
REPLY = "reply"
MAX_TURNS = 200


def _ms(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def voice_turns(quality: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """One row per reply: ``turn`` (1-based), ``stages`` (ms or None, in :data:`STAGES`
    order) and ``reply`` (ms or None)."""
    replies = (quality or {}).get("voice_stages_ms")
    if not isinstance(replies, list):
        return []
    rows = []
    for index, stages in enumerate(r for r in replies[:MAX_TURNS] if isinstance(r, Mapping)):
        rows.append(
            {
                "turn": index + 1,
                "stages": [_ms(stages.get(name)) for name, _ in STAGES],
                "reply": _ms(stages.get(REPLY)),
            }
        )
    return rows


def greeting(quality: Mapping[str, Any] | None) -> int | None:
    """The opening line's first packet after the answer (ms), when the cell timed it."""
    found = (quality or {}).get("greeting_ms")
    return _ms(found.get("first_packet")) if isinstance(found, Mapping) else None
