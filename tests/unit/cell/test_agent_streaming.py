"""Streaming ASR of one utterance (asr.interim): the interim gate, the step size,
the mock's deterministic partials and the stream driver over a recogniser."""

from __future__ import annotations

import asyncio

import pytest

from agentcall.cell.agent.config import ASRConfig
from agentcall.cell.agent.mock import MOCK_MS_PER_WORD, MockASR, MockRecognizer, mock_partial
from agentcall.cell.agent.providers import StreamingASRProvider
from agentcall.cell.agent.providers_errors import ProviderTimeoutError
from agentcall.cell.agent.streaming import InterimGate, UtteranceStream, due_bytes, step_bytes

FRAME = bytes(320)  # 20 ms at 8 kHz
CONFIG = ASRConfig("mock", None, "en-US", True, 5000)


@pytest.mark.parametrize(
    ("hypotheses", "reported"),
    [
        (["", "yes", "yes", "yes please"], ["yes", "yes please"]),
        (["  you'd ", "you'd", "utah", "utah  oh"], ["you'd", "utah", "utah oh"]),
        (["", "", "   "], []),
        (["a", "b", "a"], ["a", "b", "a"]),  # changed back: reported again
    ],
)
def test_interim_gate_reports_changed_non_empty_hypotheses(
    hypotheses: list[str], reported: list[str]
) -> None:
    gate, out = InterimGate(), []
    for hyp in hypotheses:
        gate, text = gate.offer(hyp)
        if text is not None:
            out.append(text)
    assert out == reported and gate.emitted == len(reported)


def test_interim_gate_is_silent_once_the_utterance_ended() -> None:
    gate, _ = InterimGate().offer("hello")
    assert gate.end().offer("hello there") == (gate.end(), None)


@pytest.mark.parametrize(
    ("pending", "ended", "due"),
    [(0, False, 0), (3839, False, 0), (3840, False, 3840), (9000, False, 9000), (100, True, 100)],
)
def test_due_bytes_waits_for_a_step_and_catches_up_at_once(
    pending: int, ended: bool, due: int
) -> None:
    assert step_bytes(8000) == 3840  # 240 ms of 16-bit audio at 8 kHz
    assert due_bytes(pending, step_bytes(8000), ended) == due


@pytest.mark.parametrize(
    ("heard_ms", "partial"),
    [
        (0, ""),
        (MOCK_MS_PER_WORD - 1, ""),
        (MOCK_MS_PER_WORD, "please"),
        (3 * MOCK_MS_PER_WORD, "please stop calling"),
        (60 * MOCK_MS_PER_WORD, "please stop calling me"),
    ],
)
def test_mock_partials_are_deterministic_word_prefixes(heard_ms: int, partial: str) -> None:
    assert mock_partial("please stop calling me", heard_ms) == partial


async def test_mock_asr_streams_its_script_then_falls_back_to_reference_text() -> None:
    asr = MockASR(script=["first words"])
    assert isinstance(asr, StreamingASRProvider)
    rec = await asr.open_recognizer(CONFIG, 8000)
    assert await rec.accept(bytes(320 * 10)) == "first"  # 200 ms heard
    assert await rec.finish(b"") == "first words"
    assert await (await asr.open_recognizer(CONFIG, 8000)).finish(b"") == ""  # script used up


async def feed_ms(stream: UtteranceStream, ms: int) -> None:
    for _ in range(ms // 20):
        stream.feed(FRAME)
        await asyncio.sleep(0)


async def test_stream_reports_a_bounded_partial_sequence_then_the_final() -> None:
    interims: list[str] = []
    rec = MockRecognizer("one two three four five six", 8000)

    async def open_rec() -> MockRecognizer:
        return rec

    stream = UtteranceStream(open_rec, 8000, interims.append, start_ms=40)
    await feed_ms(stream, 1000)
    await asyncio.sleep(0.01)
    stream.end(1100)
    final = await stream.result(1.0)
    assert final == "one two three four five six"
    # one hypothesis per 240 ms step: 240 ms -> 1 word, 480 -> 2, 720 -> 3, 960 -> 4
    assert interims == ["one", "one two", "one two three", "one two three four"]
    assert (stream.start_ms, stream.end_ms, rec.closed) == (40, 1100, True)


async def test_stream_never_reports_after_the_end_and_final_is_not_an_interim() -> None:
    class Wobbly(MockRecognizer):
        async def accept(self, pcm: bytes) -> str:
            await super().accept(pcm)
            return ["you'd", "utah", "utah oh really"][min(2, self.heard_ms // 240 - 1)]

        async def finish(self, pcm: bytes) -> str:
            return "please stop calling me"

    interims: list[str] = []
    rec = Wobbly("", 8000)

    async def open_rec() -> MockRecognizer:
        return rec

    stream = UtteranceStream(open_rec, 8000, interims.append)
    await feed_ms(stream, 500)
    await asyncio.sleep(0.01)
    stream.end(500)
    await feed_ms(stream, 500)  # late frames are ignored
    assert await stream.result(1.0) == "please stop calling me"
    assert interims and "please stop calling me" not in interims


async def test_a_cancelled_stream_has_no_result_and_releases_its_recogniser() -> None:
    rec = MockRecognizer("noise", 8000)

    async def open_rec() -> MockRecognizer:
        return rec

    stream = UtteranceStream(open_rec, 8000, None)
    await feed_ms(stream, 300)
    await asyncio.sleep(0.01)
    stream.cancel()
    assert await stream.result(1.0) is None
    await asyncio.sleep(0)
    assert rec.closed


async def test_a_slow_final_result_times_out() -> None:
    class Slow(MockRecognizer):
        async def finish(self, pcm: bytes) -> str:
            await asyncio.sleep(5)
            return "late"

    rec = Slow("", 8000)

    async def open_rec() -> MockRecognizer:
        return rec

    stream = UtteranceStream(open_rec, 8000, None)
    stream.end(0)
    with pytest.raises(ProviderTimeoutError):
        await stream.result(0.05)
    await asyncio.sleep(0.01)
    assert rec.closed
