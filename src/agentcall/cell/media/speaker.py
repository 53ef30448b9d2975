"""What the agent says on a live call: the queue of synthesised sentences the media
clock plays one 20 ms frame at a time, streamed replies, and reply latency.

A reply is spoken as it is written: LLM text deltas go through a
:class:`SentenceChunker`, and each sentence is synthesised and queued as soon as it is
complete, so the callee hears the first sentence while the LLM is still writing the
rest. The first piece of a streamed reply is shorter still: it ends at the first comma
once it is ``FIRST_CLAUSE_CHARS`` long, or after ``FIRST_CLAUSE_WORDS`` words when no
punctuation comes sooner. A reply written ahead of the end of the turn is synthesised
but held: nothing is queued until its ``hold`` event is set. :meth:`Speaker.stop`
(barge-in) empties the queue; the caller cancels the task that produces the reply, which
closes the LLM stream and kills a running synthesis.

Reply latency (:class:`ReplyTiming`) is measured from the end of the callee's speech
(the last voiced frame, as played out of the jitter buffer) to the moment the first
frame of the reply is handed to the RTP socket; the intermediate times say where it
went (end-of-utterance wait, ASR, LLM first token, first sentence, TTS).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from agentcall.cell.agent.config import AgentConfig, AgentMode
from agentcall.cell.agent.providers import ProviderRegistry
from agentcall.cell.audio.resample import resample
from agentcall.cell.domain.errors import CellError
from agentcall.cell.media.rtp import FRAME_MS, PCM_BYTES_PER_FRAME

log = logging.getLogger("cell.voice")
LINE_HZ = 8000
_END = re.compile(r"[.!?;](?=\s)|[。！？；]")
_CLAUSE = re.compile(r",(?=\s)|[，、]")
FIRST_CLAUSE_CHARS = 16  # a streamed reply starts speaking at its first comma past this
FIRST_CLAUSE_WORDS = 5  # ... or after this many words without punctuation


def frames_of(pcm: bytes) -> list[bytes]:
    pad = -len(pcm) % PCM_BYTES_PER_FRAME
    pcm += bytes(pad)
    return [pcm[i : i + PCM_BYTES_PER_FRAME] for i in range(0, len(pcm), PCM_BYTES_PER_FRAME)]


def _cut(text: str, max_chars: int) -> tuple[str, str]:
    cut = text.rfind(" ", 0, max_chars + 1)
    cut = cut if cut > 0 else max_chars
    return text[:cut].strip(), text[cut:].lstrip()


def _first_clause(text: str, min_chars: int, words: int | None) -> int | None:
    """Where the first clause ends: a comma (``,`` ``，`` ``、``) ending a clause of at
    least ``min_chars``, else the white space after ``words`` complete words."""
    for match in _CLAUSE.finditer(text):
        if match.end() >= min_chars:
            return match.end()
    if words is not None:
        found = re.match(rf"\s*(?:\S+\s+){{{words}}}", text)
        if found is not None:
            return found.end()
    return None


@dataclass
class SentenceChunker:
    """Splits streamed text into sentences (pure): a sentence ends at ``. ! ? ;``
    followed by white space (so ``3.5`` stays whole) or at CJK end punctuation, and is
    cut at a word boundary when longer than ``max_chars``. With ``first_clause_chars``
    the first piece of a reply already ends at a comma once it is that long, or (with
    ``first_clause_words``) after that many words, so the callee hears the start of a
    long first sentence sooner."""

    max_chars: int | None = None
    first_clause_chars: int | None = None  # the first piece may end at a comma this long
    first_clause_words: int | None = None  # ... or after this many words
    _pending: str = ""
    _cut_any: bool = False

    def _cut_at(self) -> int | None:
        match = _END.search(self._pending)
        if match is not None:
            return match.end()
        if self._cut_any or self.first_clause_chars is None:
            return None
        return _first_clause(self._pending, self.first_clause_chars, self.first_clause_words)

    def feed(self, delta: str) -> list[str]:
        self._pending += delta
        out: list[str] = []
        while True:
            end = self._cut_at()
            if end is not None:
                self._cut_any = True
                sentence, self._pending = self._pending[:end], self._pending[end:]
                out += self._bounded(sentence.strip())
                continue
            if self.max_chars is not None and len(self._pending.strip()) > self.max_chars:
                self._cut_any = True
                head, self._pending = _cut(self._pending.strip(), self.max_chars)
                out.append(head)
                continue
            return [s for s in out if s]

    def flush(self) -> list[str]:
        rest, self._pending = self._pending.strip(), ""
        return [s for s in self._bounded(rest) if s]

    def _bounded(self, sentence: str) -> list[str]:
        out: list[str] = []
        while self.max_chars is not None and len(sentence) > self.max_chars:
            head, sentence = _cut(sentence, self.max_chars)
            out.append(head)
        out.append(sentence)
        return out


@dataclass
class ReplyTiming:
    """Monotonic times (s) of one reply; None when the step did not happen."""

    speech_end: float
    utterance_end: float | None = None
    transcribed: float | None = None
    first_token: float | None = None
    first_sentence: float | None = None
    first_audio: float | None = None
    first_packet: float | None = None
    streamed: bool = False

    def ms(self, at: float | None) -> int | None:
        return None if at is None else round((at - self.speech_end) * 1000)

    @property
    def reply_ms(self) -> int | None:
        return self.ms(self.first_packet)

    def breakdown(self) -> dict[str, int | None]:
        return {
            "end_of_utterance": self.ms(self.utterance_end),
            "asr": self.ms(self.transcribed),
            "llm_first_token": self.ms(self.first_token),
            "first_sentence": self.ms(self.first_sentence),
            "tts_first_audio": self.ms(self.first_audio),
            "first_packet": self.ms(self.first_packet),
        }


@dataclass
class Speaker:
    config: AgentConfig
    providers: ProviderRegistry
    clock: Callable[[], float] = time.monotonic
    dropped_chunks: int = 0
    timings: list[ReplyTiming] = field(default_factory=list)
    greeting: ReplyTiming | None = None  # the opening line, timed from the answer
    _chunks: deque[deque[bytes]] = field(default_factory=deque)
    _owed: ReplyTiming | None = None
    _owed_chunk: deque[bytes] | None = None
    _owed_greeting: bool = False

    # -- the media clock's side --------------------------------------------------------
    def next_frame(self) -> bytes | None:
        while self._chunks and not self._chunks[0]:
            self._chunks.popleft()
        if not self._chunks:
            return None
        if self._owed is not None and self._owed_chunk is self._chunks[0]:
            self._owed.first_packet = self.clock()  # the reply's first frame goes out now
            if self._owed_greeting:
                self.greeting = self._owed
            else:
                self.timings.append(self._owed)
            self._owed, self._owed_chunk = None, None
        return self._chunks[0].popleft()

    @property
    def speaking(self) -> bool:
        return any(self._chunks)

    def queued_ms(self) -> int:
        return sum(len(c) for c in self._chunks) * FRAME_MS

    def stop(self) -> None:
        """Barge-in or the call's end: nothing more is played."""
        self._chunks.clear()
        self._owed, self._owed_chunk = None, None

    def owe(self, timing: ReplyTiming, *, greeting: bool = False) -> None:
        """A reply to the utterance of ``timing`` is on its way: time its first packet.
        ``greeting``: the opening line, whose ``speech_end`` is the answer's time."""
        self._owed, self._owed_chunk, self._owed_greeting = timing, None, greeting

    # -- producing speech ----------------------------------------------------------------
    @property
    def can_speak(self) -> bool:
        return self.config.tts is not None and self.config.mode is AgentMode.FULL_AI

    async def say(self, text: str, hold: asyncio.Event | None = None) -> list[str]:
        """Synthesise and queue ``text`` sentence by sentence; the sentences queued."""
        chunker = SentenceChunker(self.config.conversation.sentence_max_chars)
        return [s for s in chunker.feed(text) + chunker.flush() if await self._speak(s, hold)]

    async def say_stream(
        self,
        deltas: AsyncIterator[str],
        spoken: list[str],
        timing: ReplyTiming | None = None,
        hold: asyncio.Event | None = None,
    ) -> str:
        """Speak a streamed reply as it arrives; returns the whole text. ``spoken`` gets
        each sentence once it is queued (what the callee heard if this is cancelled);
        ``timing`` (the reply owed by default) gets the first token's time; with ``hold``
        sentences are synthesised at once but queued only once it is set."""
        max_chars = self.config.conversation.sentence_max_chars
        chunker = SentenceChunker(max_chars, FIRST_CLAUSE_CHARS, FIRST_CLAUSE_WORDS)
        owed, text = timing or self._owed, ""
        try:
            async for delta in deltas:
                if owed is not None and owed.first_token is None:
                    owed.first_token = self.clock()
                text += delta
                for sentence in chunker.feed(delta):
                    if await self._speak(sentence, hold):
                        spoken.append(sentence)
        finally:  # cancelled mid-sentence: close the LLM's response now, not at GC
            close = getattr(deltas, "aclose", None)
            if close is not None:
                await close()
        for sentence in chunker.flush():
            if await self._speak(sentence, hold):
                spoken.append(sentence)
        return text

    async def _speak(self, sentence: str, hold: asyncio.Event | None) -> bool:
        if hold is None or hold.is_set():
            return await self.sentence(sentence)
        chunk = await self.synthesize(sentence)  # ahead of time: nobody hears it yet
        await hold.wait()
        return chunk is not None and self.enqueue(chunk)

    async def sentence(self, sentence: str) -> bool:
        """Synthesise one sentence and queue it; False when it was not queued."""
        owed = self._owed
        if owed is not None and owed.first_sentence is None and sentence:
            owed.first_sentence = self.clock()
        chunk = await self.synthesize(sentence)
        return chunk is not None and self.enqueue(chunk)

    async def synthesize(self, sentence: str) -> deque[bytes] | None:
        """One sentence as line-rate frames (None: nothing to say, or the TTS failed)."""
        tts_config = self.config.tts
        if tts_config is None or not sentence:
            return None
        try:
            tts = self.providers.get_tts(tts_config.provider_ref)
            speech = await tts.synthesize(sentence, tts_config)
        except CellError as exc:
            log.warning("TTS failed: %s", exc.message)
            return None
        pcm = speech.pcm
        if speech.sample_rate_hz != LINE_HZ:
            pcm = resample(pcm, speech.sample_rate_hz, LINE_HZ)
        return deque(frames_of(pcm))

    def enqueue(self, chunk: deque[bytes]) -> bool:
        """Queue a synthesised sentence for the media clock; False under back-pressure."""
        limit = self.config.conversation.max_pending_audio_chunks
        if limit is not None and len(self._chunks) >= limit:
            self.dropped_chunks += 1  # back-pressure: never queue unbounded audio
            return False
        owed = self._owed
        if owed is not None and owed.first_audio is None:
            owed.first_audio = self.clock()
            self._owed_chunk = chunk
        self._chunks.append(chunk)
        return True
