"""The deterministic ``mock`` providers: the same input always gives the same output.

- ASR returns the utterance's reference text (the simulated ground truth), else the
  next text of its script (tests of live audio). Streaming, its interim hypotheses
  are the first words of that text: one more word per ``MOCK_MS_PER_WORD`` of audio.
- LLM answers the last user message with a canned reply that echoes it (streamed: one
  word per delta).
- TTS renders a tone whose pitch depends on the voice and whose length depends on
  the text and speed.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import AsyncIterator, Sequence

from agentcall.cell.agent.config import ASRConfig, LLMConfig, TTSConfig
from agentcall.cell.agent.providers import (
    ChatMessage,
    ProviderRegistry,
    Recognizer,
    Speech,
    Transcription,
    Utterance,
)
from agentcall.cell.audio.synth import SAMPLE_RATE_HZ, tone_speech

MOCK = "mock"
MS_PER_CHAR = 60
MIN_SPEECH_MS = 400
VOICE_FREQS_HZ = (250, 320, 400, 500)
NOT_HEARD_REPLY = "Sorry, I did not catch that."
MOCK_MS_PER_WORD = 200


def mock_partial(text: str, heard_ms: int) -> str:
    """The interim hypothesis after ``heard_ms`` of audio: the first words of ``text``."""
    return " ".join(text.split()[: max(0, heard_ms) // MOCK_MS_PER_WORD])


class MockRecognizer:
    def __init__(self, text: str, sample_rate_hz: int) -> None:
        self.text = text
        self.heard_ms = 0
        self.closed = False
        self._bytes_per_ms = sample_rate_hz * 2 // 1000

    async def accept(self, pcm: bytes) -> str:
        self.heard_ms += len(pcm) // self._bytes_per_ms
        return mock_partial(self.text, self.heard_ms)

    async def finish(self, pcm: bytes) -> str:
        return self.text

    def close(self) -> None:
        self.closed = True


class MockASR:
    def __init__(self, script: Sequence[str] = ()) -> None:
        self._script = deque(script)

    def _next(self, reference: str | None) -> str:
        if reference is not None:
            return reference.strip()
        return self._script.popleft().strip() if self._script else ""

    async def transcribe(self, utterance: Utterance, config: ASRConfig) -> Transcription:
        return Transcription(text=self._next(utterance.reference_text), final=True)

    async def open_recognizer(self, config: ASRConfig, sample_rate_hz: int) -> Recognizer:
        return MockRecognizer(self._next(None), sample_rate_hz)


def mock_reply(messages: Sequence[ChatMessage]) -> str:
    """The canned reply to the last user message."""
    last_user = next((m.text for m in reversed(messages) if m.role == "user"), "")
    if not last_user.strip():
        return NOT_HEARD_REPLY
    return f"Thank you. You said: {last_user.strip()}"


class MockLLM:
    async def reply(self, messages: Sequence[ChatMessage], config: LLMConfig) -> str:
        return mock_reply(messages)

    async def stream(
        self, messages: Sequence[ChatMessage], config: LLMConfig
    ) -> AsyncIterator[str]:
        """The same reply, one word (with its leading space) per delta."""
        for i, word in enumerate(mock_reply(messages).split(" ")):
            yield word if i == 0 else " " + word


def speech_ms(text: str, speed: float | None) -> int:
    """Spoken length of ``text`` for the mock voice."""
    base = max(MIN_SPEECH_MS, len(text) * MS_PER_CHAR)
    return int(base / (speed or 1.0))


def voice_freq_hz(voice: str | None) -> int:
    return VOICE_FREQS_HZ[zlib.crc32((voice or "").encode()) % len(VOICE_FREQS_HZ)]


class MockTTS:
    async def synthesize(self, text: str, config: TTSConfig) -> Speech:
        ms = speech_ms(text, config.speed)
        pcm = tone_speech(ms, voice_freq_hz(config.voice))
        return Speech(pcm=pcm, sample_rate_hz=SAMPLE_RATE_HZ, duration_ms=ms)


def mock_registry() -> ProviderRegistry:
    """A registry offering only the ``mock`` providers (the simulated mode)."""
    return ProviderRegistry(asr={MOCK: MockASR()}, llm={MOCK: MockLLM()}, tts={MOCK: MockTTS()})
