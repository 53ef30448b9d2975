"""Turn-taking rules of the voice agent (conversation.* of the agent config)."""

from __future__ import annotations

from array import array

import pytest

from agentcall.cell.media import turns
from agentcall.cell.media.turns import Listening, listen


def test_rms_of_silence_and_tone() -> None:
    assert turns.frame_rms(bytes(320)) == 0.0
    assert turns.frame_rms(array("h", [1000, -1000] * 80).tobytes()) == pytest.approx(1000)


def run(frames: str) -> list[tuple[bool, bool]]:
    """'v' voiced, '.' silent; returns (speech_started, utterance_done) per frame."""
    state, out = Listening(), []
    for i, f in enumerate(frames):
        heard = listen(state, f == "v", i * 20)
        state = heard.state
        out.append((heard.speech_started, heard.utterance_done))
    return out


def test_utterance_ends_after_500_ms_of_silence_by_default() -> None:
    result = run("v" * 20 + "." * 30)
    assert result[0] == (True, False)
    assert [i for i, (_, done) in enumerate(result) if done] == [44]


def test_short_burst_is_not_a_turn() -> None:
    assert not any(done for _, done in run("vvv" + "." * 40))


@pytest.mark.parametrize(
    ("allow", "speaking", "started", "expected"),
    [
        (True, True, True, True),
        (False, True, True, False),
        (None, True, True, False),
        (True, False, True, False),
        (True, True, False, False),
    ],
)
def test_barge_in(allow: bool | None, speaking: bool, started: bool, expected: bool) -> None:
    assert turns.should_barge_in(allow, speaking, started) is expected


@pytest.mark.parametrize(
    ("timeout", "last", "now", "expected"),
    [(3000, 0, 2999, False), (3000, 0, 3000, True), (None, 0, 10**9, False)],
)
def test_silence_timeout(timeout: int | None, last: int, now: int, expected: bool) -> None:
    assert turns.silence_expired(timeout, last, now) is expected


@pytest.mark.parametrize(
    ("limit", "done", "expected"), [(2, 1, False), (2, 2, True), (None, 99, False)]
)
def test_max_turns(limit: int | None, done: int, expected: bool) -> None:
    assert turns.turns_exhausted(limit, done) is expected


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("Hello there. How are you? Fine!", None, ["Hello there.", "How are you?", "Fine!"]),
        ("one two three four", 9, ["one two", "three", "four"]),
        ("abcdefghij", 4, ["abcd", "efgh", "ij"]),
        ("你好。再见！", 10, ["你好。", "再见！"]),
        ("  ", 5, []),
    ],
)
def test_sentence_split_respects_sentence_max_chars(
    text: str, limit: int | None, expected: list[str]
) -> None:
    assert turns.split_sentences(text, limit) == expected
