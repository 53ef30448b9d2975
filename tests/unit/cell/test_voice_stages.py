"""A voice reply's latency split into its stages (end of speech → VAD end of turn → ASR final
→ LLM first token → TTS first audio → first RTP packet): the stages add up to the reply, a
missing mark folds its stage into the next, the greeting is timed from the answer, and each
stage is one observation of ``cell_voice_stage_seconds{stage}``."""

from __future__ import annotations

import asyncio

import pytest

from agentcall.cell.media import stages
from agentcall.cell.media.speaker import ReplyTiming
from agentcall.cell.telemetry.metrics import VOICE_STAGES, CellMetrics
from tests.support import metric_names
from tests.unit.cell.test_media_voice_reply import VOICED, feed, make

pytestmark = pytest.mark.unit

FULL = ReplyTiming(
    speech_end=10.0,
    utterance_end=10.3,
    transcribed=10.31,
    first_token=10.61,
    first_sentence=10.74,
    first_audio=10.76,
    first_packet=10.77,
)


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        (
            FULL,
            {
                "vad_end_of_turn": 300,
                "asr_final": 10,
                "llm_first_token": 300,
                "tts_first_audio": 150,
                "first_rtp_packet": 10,
                "reply": 770,
            },
        ),
        (  # an opt-out goodbye: no LLM token, its TTS stage counts from the transcript
            ReplyTiming(10.0, 10.6, 10.62, None, 10.7, 10.72, 10.74),
            {
                "vad_end_of_turn": 600,
                "asr_final": 20,
                "tts_first_audio": 100,
                "first_rtp_packet": 20,
                "reply": 740,
            },
        ),
        (  # written during the end-of-turn wait: token and audio before the turn ended
            ReplyTiming(10.0, 10.5, 10.5, 10.33, 10.45, 10.5, 10.52),
            {
                "vad_end_of_turn": 500,
                "asr_final": 0,
                "llm_first_token": 0,
                "tts_first_audio": 0,
                "first_rtp_packet": 20,
                "reply": 520,
            },
        ),
        (ReplyTiming(10.0, 10.6, 10.62, 10.9), {}),  # cut by a barge-in before the wire
    ],
)
def test_the_stages_of_a_reply_add_up_to_its_latency(
    timing: ReplyTiming, expected: dict[str, int]
) -> None:
    found = stages.stage_ms(timing)
    assert found == expected
    if found:
        assert sum(v for k, v in found.items() if k != stages.REPLY) == found[stages.REPLY]
        assert found[stages.REPLY] == timing.reply_ms


def test_the_replies_that_reached_the_wire_and_their_percentiles() -> None:
    late = ReplyTiming(20.0, 20.6, 20.61, 21.0, None, 21.02, 21.04)
    cut = ReplyTiming(30.0, 30.6)
    replies = stages.replies_stage_ms([FULL, cut, late, FULL])
    assert [r["reply"] for r in replies] == [770, 1040, 770]
    table = stages.stage_percentiles(replies)
    assert list(table) == [*stages.STAGES, stages.REPLY]
    assert table["vad_end_of_turn"] == {"p50": 300, "p95": 600}
    assert table["reply"] == {"p50": 770, "p95": 1040}
    assert table["llm_first_token"] == {"p50": 300, "p95": 390}
    assert stages.stage_percentiles([]) == {}


def test_the_greeting_is_timed_from_the_answer() -> None:
    assert stages.greeting_ms(None) is None
    assert stages.greeting_ms(ReplyTiming(5.0, first_audio=5.12)) is None  # never on the wire
    greeting = ReplyTiming(5.0, first_audio=5.12, first_packet=5.13)
    assert stages.greeting_ms(greeting) == {"first_audio": 120, "first_packet": 130}


def test_the_metrics_know_the_same_stages() -> None:
    assert VOICE_STAGES == stages.STAGES


def test_each_stage_is_one_observation_of_its_labelled_histogram() -> None:
    metrics = CellMetrics()
    replies = stages.replies_stage_ms([FULL, FULL])
    preemptive = {"started": 3, "used": 2, "cancelled": 1}
    metrics.observe_quality(
        {"voice_stages_ms": replies, "greeting_ms": {"first_packet": 250}, "preemptive": preemptive}
    )
    text = metrics.render().decode()
    found = {f.name: f for f in metric_names.families(text)}
    samples = {
        (s.name, s.labels.get("stage")): s.value for s in found["cell_voice_stage_seconds"].samples
    }
    for stage in stages.STAGES:
        assert samples[("cell_voice_stage_seconds_count", stage)] == 2.0
    assert samples[("cell_voice_stage_seconds_sum", "llm_first_token")] == pytest.approx(0.6)
    greeting = {s.name: s.value for s in found["cell_greeting_latency_seconds"].samples}
    assert greeting["cell_greeting_latency_seconds_sum"] == pytest.approx(0.25)
    assert found["cell_voice_preemptive_starts"].samples[0].value == 3
    assert found["cell_voice_preemptive_cancels"].samples[0].value == 1
    assert metric_names.violations(text, ("cell_",)) == []


async def test_the_agent_times_its_greeting_and_each_stage_of_its_reply() -> None:
    agent, _ = make(opening="Hello there.")
    agent.clock = agent.speaker.clock = lambda: agent.now_ms / 1000  # the media clock's time
    agent.start()
    await feed(agent, 200)  # the opening line goes out
    greeting = stages.greeting_ms(agent.speaker.greeting)
    assert greeting is not None and greeting["first_packet"] >= greeting["first_audio"]
    assert agent.reply_timings == []  # the greeting is not a reply
    await feed(agent, 2000)  # the greeting ends
    await feed(agent, 400, VOICED)
    await feed(agent, 800)
    [reply] = stages.replies_stage_ms(agent.reply_timings)
    assert set(reply) == {*stages.STAGES, stages.REPLY}
    assert reply["vad_end_of_turn"] == 500  # the cell's end-of-utterance wait
    await asyncio.sleep(0)
    await agent.aclose()
