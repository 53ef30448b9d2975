"""Preemptive generation: the agent's reply is written while the end-of-turn wait runs.

When the VAD hears the callee stop (``PAUSE_MS`` of silence in an utterance that is at
least ``MIN_UTTERANCE_MS`` long: shorter gaps are the VAD's within a word, where nobody
pauses), the agent asks its recogniser for a fresh
hypothesis and sends the LLM the conversation with that text as the callee's turn. The
reply streams and its first sentences are synthesised, but nothing is queued for the
line: the speculative reply is *held*. Then:

- the callee speaks again before the end of the turn: the request is cancelled (its
  HTTP stream closed), and a new one starts at the next pause;
- a newer hypothesis with other words arrives during the wait: cancelled and restarted
  with the new text;
- at the end of the turn the final transcript has the same words as the text sent
  (:func:`same_words`: case, punctuation and white space do not count) and the rest of
  the conversation is unchanged (:func:`reusable`): the held reply is released and the
  callee hears it at once; otherwise it is cancelled and the reply is requested again
  with the final text.

So the callee never hears a reply to words they did not say: a reply is released only
for a final transcript with exactly the words it was written for. Speculation needs a
streaming ASR (``asr.interim``: without hypotheses there is no text to send) and is
skipped for a phrase that opts out and when ``max_turns`` ends the call at this turn.
The cell's setting ``CELL_PREEMPTIVE_GENERATION`` (on by default) turns it off; a
cancelled request costs the LLM tokens written before it was closed. Counts per call:
:class:`Preempter` (``started``, ``used``, ``cancelled``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from agentcall.cell.agent.providers import ChatMessage
from agentcall.cell.media.speaker import ReplyTiming

_NOT_A_WORD = re.compile(r"[^\w']+")
PAUSE_MS = 60  # this much silence in an utterance is a pause: write the reply now


def words(text: str) -> tuple[str, ...]:
    """The words of ``text``, lower case, without punctuation."""
    return tuple(w for w in _NOT_A_WORD.split(text.casefold()) if w.strip("'"))


def same_words(sent: str, final: str) -> bool:
    """The final transcript differs from the text sent only trivially: the same words in
    the same order (case, punctuation and white space aside) and not empty."""
    return bool(words(final)) and words(sent) == words(final)


def reusable(sent: Sequence[ChatMessage], wanted: Sequence[ChatMessage]) -> bool:
    """A reply written for the messages ``sent`` answers the messages ``wanted``: the
    same conversation, and a last callee turn with the same words."""
    if len(sent) != len(wanted) or not sent:
        return False
    last_sent, last_wanted = sent[-1], wanted[-1]
    if last_sent.role != "user" or last_wanted.role != "user":
        return False
    return list(sent[:-1]) == list(wanted[:-1]) and same_words(last_sent.text, last_wanted.text)


class Step(StrEnum):
    NONE = "none"  # nothing to do
    START = "start"  # ask the LLM with the hypothesis
    RESTART = "restart"  # cancel the running request, ask again with the new words
    CANCEL = "cancel"  # cancel the running request


def step(allowed: bool, pausing: bool, hypothesis: str | None, running: str | None) -> Step:
    """What to do with speculation after one frame (pure). ``allowed``: the agent would
    reply to this utterance; ``pausing``: the callee is silent inside an utterance (the
    end-of-turn wait); ``hypothesis``: the recogniser's current text (None: a fresh one
    is still being made); ``running``: the text of the request running, if any."""
    if not allowed or not pausing:
        return Step.CANCEL if running is not None else Step.NONE
    if hypothesis is None or not words(hypothesis):
        return Step.NONE
    if running is None:
        return Step.START
    return Step.NONE if words(running) == words(hypothesis) else Step.RESTART


@dataclass
class Preemption:
    """One speculative reply: the text and messages sent, its timing (``speech_end`` set,
    ``first_token`` filled as it streams), what it has queued, and its task."""

    text: str
    messages: tuple[ChatMessage, ...]
    timing: ReplyTiming
    hold: asyncio.Event = field(default_factory=asyncio.Event)
    spoken: list[str] = field(default_factory=list)
    task: asyncio.Task[str | None] | None = None
    used: bool = False
    dropped: bool = False

    def adopt(self, timing: ReplyTiming) -> ReplyTiming:
        """Release the held reply for the turn timed by ``timing``; the reply's timing."""
        self.used = True
        self.timing.speech_end = timing.speech_end
        self.timing.utterance_end = timing.utterance_end
        self.timing.transcribed = timing.transcribed
        self.hold.set()
        return self.timing


@dataclass
class Preempter:
    """The speculation of one call: at most one running request, and its counts."""

    start: Callable[[str], Preemption]
    running: Preemption | None = None
    started: int = 0
    used: int = 0
    cancelled: int = 0

    def hear(self, allowed: bool, pausing: bool, hypothesis: str | None) -> None:
        """Apply :func:`step` after one frame."""
        running = self.running.text if self.running is not None else None
        action = step(allowed, pausing, hypothesis, running)
        if action in (Step.CANCEL, Step.RESTART):
            self.drop()
        if action in (Step.START, Step.RESTART) and hypothesis is not None:
            self.running = self.start(hypothesis)
            self.started += 1

    def take(self) -> Preemption | None:
        """The end of the turn: the running speculation goes with the turn."""
        found, self.running = self.running, None
        return found

    def drop(self, found: Preemption | None = None) -> None:
        """Cancel ``found`` (default: the running one) unless its reply was released."""
        if found is None:
            found, self.running = self.running, None
        if found is None or found.used or found.dropped:
            return
        found.dropped = True
        if found.task is not None:
            found.task.cancel()  # closes the LLM's stream and stops its synthesis
        self.cancelled += 1

    def release(self, found: Preemption, timing: ReplyTiming) -> ReplyTiming:
        """Use ``found``'s reply for the turn timed by ``timing``: see
        :meth:`Preemption.adopt`."""
        self.used += 1
        return found.adopt(timing)

    def counts(self) -> dict[str, int]:
        return {"started": self.started, "used": self.used, "cancelled": self.cancelled}
