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


def recorded_talk_script(*more_rules: dict[str, Any]) -> dict[str, Any]:
    """Callees ending in 1 answer, say two turns and are recorded; in 2 are busy; then
    `more_rules`; everyone else does not answer; at a fiftieth of real time."""
    return {
        "version": 1,
        "time_scale": 0.02,
        "rules": [
            {
                "match": {"glob": "*1"},
                "outcome": "answered",
                "ring_ms": 500,
                "turns": ["Hello?", "Yes, tell me more."],
                "recording": True,
            },
            {"match": {"glob": "*2"}, "outcome": "busy", "ring_ms": 100},
            *more_rules,
        ],
        "default": {"outcome": "no_answer", "ring_ms": 100000, "recording": False},
    }
