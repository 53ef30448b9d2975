"""Scripts for the simulated cell (`agentcall cell --mode sim`) that several suites run."""

from __future__ import annotations

from typing import Any


def busy_talk_script(turns: list[str], no_answer_ring_ms: int) -> dict[str, Any]:
    """Callees ending in 9 are busy, in 8 answer and say `turns`; everyone else rings for
    `no_answer_ring_ms` and does not answer; at a tenth of real time."""
    return {
        "version": 1,
        "rules": [
            {
                "name": "busy",
                "match": {"glob": "*9"},
                "outcome": "busy",
                "ring_ms": 50,
                "recording": False,
            },
            {
                "name": "talk",
                "match": {"glob": "*8"},
                "outcome": "answered",
                "ring_ms": 50,
                "turns": turns,
                "recording": False,
            },
        ],
        "default": {"outcome": "no_answer", "ring_ms": no_answer_ring_ms, "recording": False},
        "time_scale": 0.1,
    }
