"""The cell's voice settings (CELL_AMD, CELL_DTMF_OPT_OUT_DIGITS, CELL_VAD,
CELL_END_OF_UTTERANCE_MS), the OpenAI stream's event lines, the quality summary and
its metrics."""

from __future__ import annotations

import pytest

from agentcall.cell.agent.providers_errors import ProviderError
from agentcall.cell.agent.providers_openai import sse_delta
from agentcall.cell.domain.errors import CellConfigError
from agentcall.cell.domain.model import AmdAction
from agentcall.cell.media import turns
from agentcall.cell.media.quality import call_quality, percentile
from agentcall.cell.media.session import MediaReport
from agentcall.cell.sip.setup import voice_options
from agentcall.cell.telemetry.metrics import CellMetrics


def test_defaults() -> None:
    options, vad = voice_options({})
    assert (options.amd, options.opt_out_digits, options.end_of_utterance_ms, vad) == (
        AmdAction.OFF,
        frozenset(),
        500,
        "webrtc",
    )


@pytest.mark.parametrize(
    ("env", "field", "value"),
    [
        ({"CELL_AMD": "hangup"}, "amd", AmdAction.HANGUP),
        ({"CELL_AMD": "leave_message"}, "amd", AmdAction.LEAVE_MESSAGE),
        ({"CELL_DTMF_OPT_OUT_DIGITS": "9"}, "opt_out_digits", frozenset("9")),
        ({"CELL_DTMF_OPT_OUT_DIGITS": "9,#"}, "opt_out_digits", frozenset("9#")),
        ({"CELL_END_OF_UTTERANCE_MS": "400"}, "end_of_utterance_ms", 400),
        ({"CELL_INBAND_DTMF": "0"}, "inband_dtmf", False),
        ({}, "preemptive", True),
        ({"CELL_PREEMPTIVE_GENERATION": "0"}, "preemptive", False),
    ],
)
def test_settings(env: dict[str, str], field: str, value: object) -> None:
    assert getattr(voice_options(env)[0], field) == value


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CELL_AMD": "maybe"}, "CELL_AMD"),
        ({"CELL_DTMF_OPT_OUT_DIGITS": "9x"}, "CELL_DTMF_OPT_OUT_DIGITS"),
        ({"CELL_VAD": "silero"}, "CELL_VAD"),
        ({"CELL_END_OF_UTTERANCE_MS": "20"}, "CELL_END_OF_UTTERANCE_MS"),
        ({"CELL_END_OF_UTTERANCE_MS": "soon"}, "CELL_END_OF_UTTERANCE_MS"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(CellConfigError, match=named):
        voice_options(env)


@pytest.mark.parametrize(
    ("setting", "timeout", "expected"), [(600, None, 600), (600, 3000, 600), (600, 400, 400)]
)
def test_end_of_utterance_never_exceeds_the_silence_timeout(
    setting: int, timeout: int | None, expected: int
) -> None:
    assert turns.end_of_utterance_ms(setting, timeout) == expected


@pytest.mark.parametrize(
    ("line", "delta"),
    [
        ('data: {"choices":[{"delta":{"content":"Hi"}}]}', "Hi"),
        ('data: {"choices":[{"delta":{"role":"assistant"}}]}', ""),
        ('data: {"choices":[]}', ""),
        (": keep-alive", ""),
        ("", ""),
        ("data: [DONE]", None),
    ],
)
def test_sse_lines(line: str, delta: str | None) -> None:
    assert sse_delta(line) == delta


@pytest.mark.parametrize("line", ["data: {not json", 'data: {"id": 1}', 'data: {"choices":[1]}'])
def test_sse_garbage_is_a_provider_error(line: str) -> None:
    with pytest.raises(ProviderError):
        sse_delta(line)


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([], 0.5, None), ([5], 0.5, 5), ([1, 2, 3, 4], 0.5, 2), ([1, 2, 3, 4], 0.95, 4)],
)
def test_percentile(values: list[float], q: float, expected: float | None) -> None:
    assert percentile(values, q) == expected


MEDIA = MediaReport(
    sent=500,
    received=480,
    expected=500,
    lost=20,
    late=3,
    concealed=20,
    jitter_ms=4.5,
    late_ticks=2,
    ticks=500,
    other_payloads=0,
    stalls=1,
    max_lag_ms=75.0,
    dtmf_events=1,
)


def test_quality_summary_and_its_metrics() -> None:
    amd = {"verdict": "human", "why": "500 ms greeting then silence", "action": "hangup"}
    quality = call_quality(MEDIA, [640, 520, 900], vad="webrtc", amd=amd, dtmf=["9"])
    assert quality["rtp"]["loss_ratio"] == 0.04 and quality["rtp"]["late_packets"] == 3
    assert quality["clock"] == {"ticks": 500, "late_ticks": 2, "stalls": 1, "max_lag_ms": 75.0}
    assert (quality["reply_latency_p50_ms"], quality["reply_latency_max_ms"]) == (640, 900)
    metrics = CellMetrics()
    metrics.observe_quality(quality)
    metrics.observe_quality(None)
    text = metrics.render().decode()
    assert "cell_reply_latency_seconds_count 3.0" in text
    assert 'cell_reply_latency_seconds_bucket{le="0.7"} 2.0' in text
    assert "cell_call_rtp_loss_ratio_count 1.0" in text
    assert "cell_call_media_clock_stalls_sum 1.0" in text
    assert 'cell_amd_verdicts_total{verdict="human"} 1.0' in text
    assert "cell_dtmf_keys_total 1.0" in text


def test_unanswered_media_has_no_rtp_figures() -> None:
    quality = call_quality(None, [], vad="energy", amd=None, dtmf=[])
    assert quality["rtp"] is None and quality["reply_latency_p50_ms"] is None
