"""Where a voice reply's latency goes, stage by stage (pure).

A reply's :class:`~agentcall.cell.media.speaker.ReplyTiming` marks six moments: the end
of the callee's speech (the last voiced frame), the VAD's end-of-turn decision, the ASR's
final result, the LLM's first token, the first synthesised audio queued, and the first
frame of the reply handed to the RTP socket. Each stage is the time between one mark and
the one before it, so the stages of a reply add up to its reply latency:

- ``vad_end_of_turn``: the silence the VAD waits before it calls the turn over
  (``CELL_END_OF_UTTERANCE_MS``);
- ``asr_final``: the end-of-turn decision to the final transcript;
- ``llm_first_token``: the transcript to the LLM's first text (the whole reply when the
  LLM does not stream);
- ``tts_first_audio``: the first token to the first synthesised audio (the wait for the
  first sentence or clause, then its synthesis);
- ``first_rtp_packet``: that audio queued to its first frame on the wire (the media
  clock's next tick, after whatever the agent was still saying).

A mark that did not happen (an opt-out goodbye has no LLM token) leaves its stage out; the
next stage is then measured from the last mark before it. A mark reached before the one
ahead of it (a reply written during the end-of-turn wait by preemptive generation has its
first token before the end of the turn) makes its stage 0, and the next stage is measured
from the later mark, so the stages still add up to the reply. The greeting (the opening line)
is timed from the answer: :func:`greeting_ms`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from agentcall.cell.media.quality import percentile
from agentcall.cell.media.speaker import ReplyTiming

STAGES = ("vad_end_of_turn", "asr_final", "llm_first_token", "tts_first_audio", "first_rtp_packet")
"""The stages of a reply, in the order they happen."""
REPLY = "reply"
"""The whole reply: the end of the callee's speech to the first packet."""


def _marks(timing: ReplyTiming) -> tuple[float | None, ...]:
    return (
        timing.utterance_end,
        timing.transcribed,
        timing.first_token,
        timing.first_audio,
        timing.first_packet,
    )


def stage_ms(timing: ReplyTiming) -> dict[str, int]:
    """The stages of one reply (ms, see the module's docstring) and the ``reply`` total;
    empty for a reply whose first packet never went out (barge-in, the call's end)."""
    if timing.first_packet is None:
        return {}
    out: dict[str, int] = {}
    last = timing.speech_end
    for stage, mark in zip(STAGES, _marks(timing), strict=True):
        if mark is None:
            continue
        out[stage] = max(0, round((mark - last) * 1000))
        last = max(last, mark)
    out[REPLY] = max(0, round((timing.first_packet - timing.speech_end) * 1000))
    return out


def replies_stage_ms(timings: Iterable[ReplyTiming]) -> list[dict[str, int]]:
    """The stages of each reply that reached the wire, in order."""
    return [stages for stages in (stage_ms(t) for t in timings) if stages]


def greeting_ms(timing: ReplyTiming | None) -> dict[str, int] | None:
    """The opening line, timed from the answer (``speech_end`` holds the answer's time):
    ``first_audio`` (synthesised and queued) and ``first_packet`` (on the wire)."""
    if timing is None or timing.first_packet is None:
        return None
    out = {"first_packet": max(0, round((timing.first_packet - timing.speech_end) * 1000))}
    if timing.first_audio is not None:
        out["first_audio"] = max(0, round((timing.first_audio - timing.speech_end) * 1000))
    return out


def stage_percentiles(
    replies: Sequence[Mapping[str, int]], quantiles: Sequence[float] = (0.5, 0.95)
) -> dict[str, dict[str, float | None]]:
    """``{stage: {"p50": ms, "p95": ms}}`` over replies (nearest rank), each of
    :data:`STAGES` and :data:`REPLY` that any reply has, in that order."""
    out: dict[str, dict[str, float | None]] = {}
    for stage in (*STAGES, REPLY):
        values = [r[stage] for r in replies if stage in r]
        if values:
            out[stage] = {f"p{round(q * 100)}": percentile(values, q) for q in quantiles}
    return out
