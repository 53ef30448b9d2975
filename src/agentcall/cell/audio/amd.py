"""Answering-machine detection from the first seconds of an answered call (pure).

The heuristic of classic AMD (Asterisk's ``AMD()``, VICIdial's AMD), run on the
voice-activity decision of each 20 ms frame after the answer: a person says a short
"hello?" and waits; a machine talks on. Words are voiced stretches of at least
``min_word_ms`` separated by at least ``between_words_ms`` of silence.

=========================================  ==========================================
what is heard                              verdict
=========================================  ==========================================
a greeting of less than ``greeting_ms``    ``human``
of speech, then ``after_greeting_ms``
of silence
``greeting_ms`` of speech before such a    ``machine``
pause, or ``max_words`` words
the beep of a voicemail (``audio.tones``)  ``machine`` (whatever came before)
nothing for ``initial_silence_ms``, or no  ``unknown`` (handled as a person: the agent
verdict after ``total_ms``                 talks)
=========================================  ==========================================
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum


class Verdict(StrEnum):
    PENDING = "pending"
    HUMAN = "human"
    MACHINE = "machine"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class AmdParams:
    initial_silence_ms: int = 2500
    greeting_ms: int = 1800
    after_greeting_ms: int = 800
    min_word_ms: int = 100
    between_words_ms: int = 60
    max_words: int = 5
    total_ms: int = 6000


@dataclass(frozen=True)
class AmdState:
    elapsed_ms: int = 0
    voiced_ms: int = 0  # speech heard so far (all words)
    silence_ms: int = 0  # silence since the last voiced frame
    run_ms: int = 0  # the current voiced stretch
    words: int = 0
    spoke: bool = False
    verdict: Verdict = Verdict.PENDING
    why: str = ""

    def decided(self, verdict: Verdict, why: str) -> AmdState:
        return replace(self, verdict=verdict, why=why)


def _voiced(s: AmdState, p: AmdParams, frame_ms: int) -> AmdState:
    run = s.run_ms + frame_ms
    words = s.words + (1 if s.run_ms < p.min_word_ms <= run else 0)
    s = replace(s, voiced_ms=s.voiced_ms + frame_ms, silence_ms=0, run_ms=run, words=words)
    s = replace(s, spoke=words > 0)  # a click is not a greeting
    if s.voiced_ms >= p.greeting_ms:
        return s.decided(Verdict.MACHINE, f"greeting longer than {p.greeting_ms} ms")
    if s.words >= p.max_words:
        return s.decided(Verdict.MACHINE, f"{s.words} words without a pause")
    return s


def _silent(s: AmdState, p: AmdParams, frame_ms: int) -> AmdState:
    silence = s.silence_ms + frame_ms
    run = 0 if silence >= p.between_words_ms else s.run_ms
    s = replace(s, silence_ms=silence, run_ms=run)
    if s.spoke and silence >= p.after_greeting_ms:
        return s.decided(Verdict.HUMAN, f"{s.voiced_ms} ms greeting then silence")
    if not s.spoke and s.elapsed_ms >= p.initial_silence_ms:
        return s.decided(Verdict.UNKNOWN, "silence after the answer")
    return s


def amd_step(
    state: AmdState, voiced: bool, beep: bool, params: AmdParams, frame_ms: int = 20
) -> AmdState:
    """The detector after one more frame; a decided state never changes again, except
    that a beep turns any verdict into ``machine``."""
    if beep and state.verdict is not Verdict.MACHINE:
        return state.decided(Verdict.MACHINE, "voicemail beep")
    if state.verdict is not Verdict.PENDING:
        return state
    state = replace(state, elapsed_ms=state.elapsed_ms + frame_ms)
    state = _voiced(state, params, frame_ms) if voiced else _silent(state, params, frame_ms)
    if state.verdict is Verdict.PENDING and state.elapsed_ms >= params.total_ms:
        return state.decided(Verdict.UNKNOWN, f"no verdict within {params.total_ms} ms")
    return state
