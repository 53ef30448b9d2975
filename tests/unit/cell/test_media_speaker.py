"""Streamed text is cut into sentences as it arrives (the first sentence is spoken
before the reply is complete), never longer than sentence_max_chars."""

from __future__ import annotations

import pytest

from agentcall.cell.media.speaker import ReplyTiming, SentenceChunker


def chunked(deltas: list[str], max_chars: int | None = None) -> list[list[str]]:
    chunker = SentenceChunker(max_chars)
    return [chunker.feed(d) for d in deltas] + [chunker.flush()]


@pytest.mark.parametrize(
    ("deltas", "max_chars", "expected"),
    [
        (
            ["Hello", " there.", " How", " are you?"],
            None,
            [[], [], ["Hello there."], [], ["How are you?"]],
        ),
        (
            ["It costs 3", ".5 dollars", ". Okay"],
            None,
            [[], [], ["It costs 3.5 dollars."], ["Okay"]],
        ),
        (["Yes! ", "No"], None, [["Yes!"], [], ["No"]]),
        (["好的。请", "稍等"], None, [["好的。"], [], ["请稍等"]]),
        (["one two three four"], 9, [["one two", "three"], ["four"]]),
        (["averyveryverylongword."], 5, [["avery", "veryv", "erylo", "ngwor"], ["d."]]),
        ([""], None, [[], []]),
    ],
)
def test_sentences_as_they_complete(
    deltas: list[str], max_chars: int | None, expected: list[list[str]]
) -> None:
    assert chunked(deltas, max_chars) == expected


def test_whole_text_matches_the_sentence_split() -> None:
    chunker = SentenceChunker(80)
    assert chunker.feed("One. Two. Three.") + chunker.flush() == ["One.", "Two.", "Three."]


def test_reply_timing_breakdown() -> None:
    timing = ReplyTiming(speech_end=10.0, utterance_end=10.6, transcribed=10.61)
    timing.first_token, timing.first_sentence, timing.first_audio = 10.9, 11.1, 11.15
    timing.first_packet = 11.16
    assert timing.reply_ms == 1160
    assert timing.breakdown() == {
        "end_of_utterance": 600,
        "asr": 610,
        "llm_first_token": 900,
        "first_sentence": 1100,
        "tts_first_audio": 1150,
        "first_packet": 1160,
    }
    assert ReplyTiming(speech_end=1.0).reply_ms is None


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [
        (
            ["Thanks for asking,", " I can", " help. Yes,", " sure."],
            [[], ["Thanks for asking,"], ["I can help."], [], ["Yes, sure."]],
        ),
        (["Hi, there", " friend. Ok"], [[], ["Hi, there friend."], ["Ok"]]),  # clause too short
        (["好的，我来帮您查询", "一下。"], [["好的，"], ["我来帮您查询一下。"], []]),
    ],
)
def test_the_first_piece_of_a_streamed_reply_may_end_at_a_comma(
    deltas: list[str], expected: list[list[str]]
) -> None:
    chunker = SentenceChunker(None, first_clause_chars=3)
    if deltas[0].startswith("Hi"):
        chunker = SentenceChunker(None, first_clause_chars=16)
    assert [chunker.feed(d) for d in deltas] + [chunker.flush()] == expected


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [
        # five complete words and no punctuation: the first piece goes to the TTS
        (
            ["Our offer gives you two", " months free"],
            [[], ["Our offer gives you two"], ["months free"]],
        ),
        # the fifth word is complete only once white space follows it
        (["One two three four five"], [[], ["One two three four five"]]),
        # punctuation sooner wins; later pieces are whole sentences again
        (
            ["Yes, that is fine. Our offer gives you two", " months free"],
            [["Yes, that is fine."], [], ["Our offer gives you two months free"]],
        ),
        (["Sure; one two three four five six"], [["Sure;"], ["one two three four five six"]]),
    ],
)
def test_the_first_piece_of_a_streamed_reply_ends_after_n_words_without_punctuation(
    deltas: list[str], expected: list[list[str]]
) -> None:
    chunker = SentenceChunker(None, first_clause_chars=16, first_clause_words=5)
    assert [chunker.feed(d) for d in deltas] + [chunker.flush()] == expected
