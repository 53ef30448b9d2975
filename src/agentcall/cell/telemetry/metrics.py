"""Prometheus metrics of one cell process (own registry, served on /metrics).

Voice and call-quality figures are observed once per answered SIP call, when it
ends, from the ``quality`` summary of its record (:meth:`CellMetrics.observe_quality`):
``cell_voice_stage_seconds{stage}`` holds each reply's stages (the five of
:data:`agentcall.cell.media.stages.STAGES`, a bounded label) and
``cell_greeting_latency_seconds`` the answer to the opening line's first packet;
``cell_voice_preemptive_starts_total`` and ``cell_voice_preemptive_cancels_total`` count
the replies written during the end-of-turn wait and those cancelled (the callee went on,
or said other words).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
LOSS_BUCKETS = (0.0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
JITTER_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.5)
COUNT_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 500)
LAG_BUCKETS = (0.01, 0.02, 0.04, 0.06, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 2.0, 5.0)
# agentcall.cell.media.stages.STAGES (telemetry sits below media; a unit test keeps them one)
VOICE_STAGES = (
    "vad_end_of_turn",
    "asr_final",
    "llm_first_token",
    "tts_first_audio",
    "first_rtp_packet",
)

HANDLED: dict[str, int] = {}
"""Failures caught, logged and survived, by place (``cell_handled_errors_total{where}``)."""


def count_handled(where: str) -> None:
    """Count a failure the process survives (its caller writes the log line)."""
    HANDLED[where] = HANDLED.get(where, 0) + 1


class _Handled(Collector):
    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "cell_handled_errors", "Failures caught, logged and survived", labels=["where"]
        )
        for where, count in sorted(HANDLED.items()):
            family.add_metric([where], count)
        yield family


class CellMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.originated = Counter(
            "cell_calls_originated_total", "Calls dialled (originate log entries)", registry=r
        )
        self.originate_refused = Counter(
            "cell_originate_refused_total", "Originate requests refused", ["code"], registry=r
        )
        self.ended = Counter("cell_calls_ended_total", "Calls ended", ["outcome"], registry=r)
        self.in_progress = Gauge("cell_calls_in_progress", "Calls not ended yet", registry=r)
        self.tracked = Gauge("cell_calls_tracked", "Calls kept until acknowledged", registry=r)
        self.events = Counter("cell_events_total", "Events emitted", ["type"], registry=r)
        self.uploads = Counter("cell_uploads_total", "Recording uploads", ["status"], registry=r)
        self.subscribers = Gauge(
            "cell_event_subscribers", "Connected event stream subscribers", registry=r
        )
        r.register(_Handled())
        self._media_histograms(r)
        self._voice_histograms(r)

    def _voice_histograms(self, r: CollectorRegistry) -> None:
        self.voice_stage = Histogram(
            "cell_voice_stage_seconds",
            "Each stage of an agent reply: VAD end of turn, ASR final, LLM first token, "
            "TTS first audio, first RTP packet (they add up to cell_reply_latency_seconds)",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        for stage in VOICE_STAGES:  # every stage's series from the start
            self.voice_stage.labels(stage)
        self.preemptive_starts = Counter(
            "cell_voice_preemptive_starts_total",
            "Replies the voice agent started writing during the end-of-turn wait",
            registry=r,
        )
        self.preemptive_cancels = Counter(
            "cell_voice_preemptive_cancels_total",
            "Replies written during the end-of-turn wait that were cancelled unheard",
            registry=r,
        )
        self.greeting_latency = Histogram(
            "cell_greeting_latency_seconds",
            "Answer to the first packet of the opening line on the wire",
            buckets=STAGE_BUCKETS,
            registry=r,
        )

    def _media_histograms(self, r: CollectorRegistry) -> None:
        self.reply_latency = Histogram(
            "cell_reply_latency_seconds",
            "End of the callee's speech to the first packet of the agent's reply on the wire",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.rtp_loss = Histogram(
            "cell_call_rtp_loss_ratio",
            "RTP packets lost / expected, per call",
            buckets=LOSS_BUCKETS,
            registry=r,
        )
        self.rtp_jitter = Histogram(
            "cell_call_rtp_jitter_seconds",
            "RFC 3550 interarrival jitter at the call's end",
            buckets=JITTER_BUCKETS,
            registry=r,
        )
        self.rtp_late = Histogram(
            "cell_call_rtp_late_packets",
            "RTP packets that arrived after their playout slot, per call",
            buckets=COUNT_BUCKETS,
            registry=r,
        )
        self.rtp_concealed = Histogram(
            "cell_call_rtp_concealed_packets",
            "Playout slots filled with silence because their packet was missing, per call",
            buckets=COUNT_BUCKETS,
            registry=r,
        )
        self.clock_stalls = Histogram(
            "cell_call_media_clock_stalls",
            "Times the media clock fell over 60 ms behind, per call",
            buckets=COUNT_BUCKETS,
            registry=r,
        )
        self.clock_lag = Histogram(
            "cell_call_media_clock_max_lag_seconds",
            "Worst media-clock lag of a call",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.machines = Counter(
            "cell_amd_verdicts_total",
            "Answering-machine detection verdicts",
            ["verdict"],
            registry=r,
        )
        self.dtmf = Counter("cell_dtmf_keys_total", "Keypad presses heard", registry=r)

    def observe_quality(self, quality: Mapping[str, Any] | None) -> None:
        """Observe one ended call's quality summary (see agentcall.cell.media.quality)."""
        if not quality:
            return
        for ms in quality.get("reply_latency_ms") or ():
            self.reply_latency.observe(ms / 1000)
        self._observe_stages(quality)
        rtp, clock = quality.get("rtp"), quality.get("clock")
        if rtp:
            self.rtp_loss.observe(rtp["loss_ratio"])
            self.rtp_jitter.observe(rtp["jitter_ms"] / 1000)
            self.rtp_late.observe(rtp["late_packets"])
            self.rtp_concealed.observe(rtp.get("concealed", 0))
        if clock:
            self.clock_stalls.observe(clock["stalls"])
            self.clock_lag.observe(clock["max_lag_ms"] / 1000)
        amd = quality.get("answering_machine")
        if amd:
            self.machines.labels(amd["verdict"]).inc()
        if quality.get("dtmf"):
            self.dtmf.inc(len(quality["dtmf"]))

    def _observe_stages(self, quality: Mapping[str, Any]) -> None:
        for stages in quality.get("voice_stages_ms") or ():
            for stage in VOICE_STAGES:
                if stage in stages:
                    self.voice_stage.labels(stage).observe(stages[stage] / 1000)
        preemptive = quality.get("preemptive") or {}
        self.preemptive_starts.inc(preemptive.get("started", 0))
        self.preemptive_cancels.inc(preemptive.get("cancelled", 0))
        greeting = quality.get("greeting_ms") or {}
        if "first_packet" in greeting:
            self.greeting_latency.observe(greeting["first_packet"] / 1000)

    def render(self) -> bytes:
        return generate_latest(self.registry)
