"""Opt-out detection on what the callee said."""

from __future__ import annotations

import pytest

from agentcall.cell.agent.optout import OptOutDetector


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Please STOP  calling me", "stop calling"),
        ("Do not call this number again", "do not call"),
        ("Don’t call me", "don't call"),
        ("请不要再打这个电话了", "不要再打"),
        ("Hello, who is this?", None),
        ("", None),
    ],
)
def test_default_phrases(text: str, found: str | None) -> None:
    assert OptOutDetector().detect(text) == found


def test_configured_phrases_replace_defaults() -> None:
    detector = OptOutDetector.of(["Go Away", "  "])
    assert detector.phrases == ("go away",)
    assert detector.detect("please go   away") == "go away"
    assert detector.detect("stop calling") is None
