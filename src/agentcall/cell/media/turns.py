"""Turn-taking decisions of the voice agent on a live call (pure, times in ms).

Energy-based voice activity (the fallback of :mod:`agentcall.cell.audio.vad`), end of an
utterance, barge-in, silence timeout, max turns and sentence splitting;
:mod:`agentcall.cell.media.voice` applies them.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, replace

SPEECH_RMS = 500.0  # 16-bit RMS above which a 20 ms frame counts as speech
END_OF_UTTERANCE_MS = 500  # this much silence after speech ends the utterance
MIN_UTTERANCE_MS = 200  # shorter bursts are noise, not a turn
BARGE_IN_MS = 40  # this much of the callee's speech stops the agent (allow_interrupt)


def frame_rms(pcm: bytes) -> float:
    samples = array("h")
    samples.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    if not samples:
        return 0.0
    return float((sum(s * s for s in samples) / len(samples)) ** 0.5)


@dataclass(frozen=True)
class Listening:
    """Where the callee is in an utterance."""

    speech_ms: int = 0  # voiced time in the current utterance
    silence_ms: int = 0  # silence since the last voiced frame
    started_at_ms: int | None = None

    @property
    def in_utterance(self) -> bool:
        return self.started_at_ms is not None


@dataclass(frozen=True)
class Heard:
    state: Listening
    utterance_done: bool = False  # the utterance just ended: transcribe it
    speech_started: bool = False  # the callee just started talking (barge-in point)


def listen(
    state: Listening,
    voiced: bool,
    now_ms: int,
    frame_ms: int = 20,
    end_ms: int = END_OF_UTTERANCE_MS,
) -> Heard:
    """Advance the voice-activity state by one frame; ``end_ms`` of silence after speech
    ends the utterance."""
    if voiced:
        started = state.started_at_ms is None
        begin = now_ms if started else state.started_at_ms
        new = Listening(state.speech_ms + frame_ms, 0, begin)
        return Heard(new, speech_started=started)
    if not state.in_utterance:
        return Heard(state)
    silence = state.silence_ms + frame_ms
    if silence < end_ms:
        return Heard(replace(state, silence_ms=silence))
    if state.speech_ms < MIN_UTTERANCE_MS:
        return Heard(Listening())  # a click or a cough
    return Heard(Listening(), utterance_done=True)


def onset(before: Listening, after: Listening, min_ms: int = BARGE_IN_MS) -> bool:
    """The callee has now spoken ``min_ms`` in this utterance (one frame of noise is not
    a reason to stop the agent)."""
    return after.in_utterance and before.speech_ms < min_ms <= after.speech_ms


def end_of_utterance_ms(setting_ms: int, silence_timeout_ms: int | None) -> int:
    """Silence that ends an utterance: the cell's setting, never longer than the task's
    ``silence_timeout_ms``."""
    if silence_timeout_ms is None:
        return setting_ms
    return max(20, min(setting_ms, silence_timeout_ms))


def should_barge_in(allow_interrupt: bool | None, agent_speaking: bool, started: bool) -> bool:
    return bool(allow_interrupt) and agent_speaking and started


def interim_barges_in(allow_interrupt: bool | None, agent_speaking: bool, interim: str) -> bool:
    """Words recognised while the agent talks cut it off, even when the callee
    started speaking before the agent did (energy onset came too early to count)."""
    return bool(allow_interrupt) and agent_speaking and bool(interim.strip())


def silence_expired(timeout_ms: int | None, last_activity_ms: int, now_ms: int) -> bool:
    """No one spoke for ``silence_timeout_ms`` (None: never)."""
    return timeout_ms is not None and now_ms - last_activity_ms >= timeout_ms


def turns_exhausted(max_turns: int | None, user_turns: int) -> bool:
    return max_turns is not None and user_turns >= max_turns


_SENTENCE_END = re.compile(r"(?<=[.!?。！？;；])\s*")


def split_sentences(text: str, max_chars: int | None) -> list[str]:
    """Sentences of ``text``, each cut to at most ``max_chars`` at a word boundary."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text) if p.strip()]
    if max_chars is None:
        return pieces
    out: list[str] = []
    for piece in pieces:
        while len(piece) > max_chars:
            cut = piece.rfind(" ", 0, max_chars + 1)
            cut = cut if cut > 0 else max_chars
            out.append(piece[:cut].strip())
            piece = piece[cut:].strip()
        if piece:
            out.append(piece)
    return out
