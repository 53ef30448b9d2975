"""The ``quality`` summary of one SIP call, kept in the cell's call record (pure).

It is the cell's own report (``GET /v1/calls/{id}``, the ``call.ended`` event): the
contract's ``call.result`` is not changed by it.

- ``rtp``: packets expected/received/lost and the loss ratio (RFC 3550), interarrival
  jitter (ms), packets that arrived after their playout slot (late), slots played
  as silence (concealed);
- ``clock``: media-clock ticks, ticks more than 10 ms late, stalls (the clock more
  than 60 ms behind) and the worst lag (ms);
- ``reply_latency_ms``: per agent reply, from the end of the callee's speech to the
  first packet of the reply on the wire; ``reply_latency_p50_ms``/``_max_ms``;
- ``voice_stages_ms``: per agent reply, where that time went (VAD end of turn, ASR final,
  LLM first token, TTS first audio, first RTP packet: :mod:`agentcall.cell.media.stages`);
  ``greeting_ms``: the opening line's ``first_audio`` and ``first_packet`` after the answer;
  ``preemptive``: replies written during the end-of-turn wait: ``started``, ``used`` (heard)
  and ``cancelled`` (:mod:`agentcall.cell.media.preempt`);
- ``answering_machine`` (AMD verdict and why, when detection is on) and ``dtmf`` (the
  keys pressed, in order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentcall.cell.media.session import MediaReport


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) by the nearest-rank method; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q * len(ordered) + 0.5)))
    return ordered[rank - 1]


def rtp_summary(media: MediaReport) -> dict[str, Any]:
    expected = media.expected
    return {
        "packets_expected": expected,
        "packets_received": media.received,
        "packets_lost": media.lost,
        "loss_ratio": round(media.lost / expected, 4) if expected else 0.0,
        "jitter_ms": media.jitter_ms,
        "late_packets": media.late,
        "concealed": media.concealed,
        "packets_sent": media.sent,
        "telephone_events": media.dtmf_events,
    }


def clock_summary(media: MediaReport) -> dict[str, Any]:
    return {
        "ticks": media.ticks,
        "late_ticks": media.late_ticks,
        "stalls": media.stalls,
        "max_lag_ms": media.max_lag_ms,
    }


def call_quality(
    media: MediaReport | None,
    reply_latency_ms: Sequence[int],
    *,
    vad: str,
    amd: dict[str, str] | None,
    dtmf: Sequence[str],
    voice_stages_ms: Sequence[Mapping[str, int]] = (),
    greeting_ms: Mapping[str, int] | None = None,
    preemptive: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The summary of an answered call (``media`` None: the media never started)."""
    p50 = percentile(reply_latency_ms, 0.5)
    return {
        "rtp": rtp_summary(media) if media is not None else None,
        "clock": clock_summary(media) if media is not None else None,
        "reply_latency_ms": list(reply_latency_ms),
        "reply_latency_p50_ms": p50,
        "reply_latency_max_ms": max(reply_latency_ms) if reply_latency_ms else None,
        "voice_stages_ms": [dict(stages) for stages in voice_stages_ms],
        "greeting_ms": dict(greeting_ms) if greeting_ms is not None else None,
        "preemptive": dict(preemptive) if preemptive is not None else None,
        "vad": vad,
        "answering_machine": amd,
        "dtmf": list(dtmf),
    }
