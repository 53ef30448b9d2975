"""Provider interfaces of the voice agent (ASR, LLM, TTS), keyed by ``provider_ref``.

The cell holds one :class:`ProviderRegistry`; a call plan whose agent config names
a provider the registry lacks is refused before anything is dialled. Real providers
(SIP mode) implement the same protocols.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from agentcall.cell.agent.config import AgentConfig, ASRConfig, LLMConfig, TTSConfig
from agentcall.cell.domain.errors import UnknownProviderError

P = TypeVar("P")


@dataclass(frozen=True)
class Utterance:
    """Audio heard from the callee: 16-bit PCM mono; ``reference_text`` is the ground
    truth when the channel is simulated (mock ASR returns it)."""

    pcm: bytes
    sample_rate_hz: int
    reference_text: str | None = None


@dataclass(frozen=True)
class Transcription:
    text: str
    final: bool = True


@dataclass(frozen=True)
class ChatMessage:
    role: str  # system | user | assistant
    text: str


@dataclass(frozen=True)
class Speech:
    """Synthesised agent audio: 16-bit PCM mono."""

    pcm: bytes
    sample_rate_hz: int
    duration_ms: int


class ASRProvider(Protocol):
    async def transcribe(self, utterance: Utterance, config: ASRConfig) -> Transcription: ...


class Recognizer(Protocol):
    """One utterance being recognised as its audio arrives (16-bit PCM mono at the
    rate given when it was opened). Calls never overlap; ``close`` never blocks."""

    async def accept(self, pcm: bytes) -> str: ...  # more audio; the current hypothesis

    async def finish(self, pcm: bytes) -> str: ...  # the last audio; the final text

    def close(self) -> None: ...  # release the decoder (also after a cancelled call)


@runtime_checkable
class StreamingASRProvider(Protocol):
    """An ASR provider that can also recognise while the callee speaks (interim)."""

    async def transcribe(self, utterance: Utterance, config: ASRConfig) -> Transcription: ...

    async def open_recognizer(self, config: ASRConfig, sample_rate_hz: int) -> Recognizer: ...


class LLMProvider(Protocol):
    async def reply(self, messages: Sequence[ChatMessage], config: LLMConfig) -> str: ...


@runtime_checkable
class StreamingLLMProvider(Protocol):
    """An LLM provider that can also stream its reply: text deltas as they are made."""

    async def reply(self, messages: Sequence[ChatMessage], config: LLMConfig) -> str: ...

    def stream(self, messages: Sequence[ChatMessage], config: LLMConfig) -> AsyncIterator[str]: ...


class TTSProvider(Protocol):
    async def synthesize(self, text: str, config: TTSConfig) -> Speech: ...


@dataclass(frozen=True)
class ProviderRegistry:
    asr: Mapping[str, ASRProvider] = field(default_factory=dict)
    llm: Mapping[str, LLMProvider] = field(default_factory=dict)
    tts: Mapping[str, TTSProvider] = field(default_factory=dict)

    def names(self) -> dict[str, list[str]]:
        return {"asr": sorted(self.asr), "llm": sorted(self.llm), "tts": sorted(self.tts)}

    def check(self, config: AgentConfig, path: str = "agent") -> None:
        """Raise :class:`UnknownProviderError` naming the first unknown provider_ref."""
        offered = self.names()
        for kind, ref in config.provider_refs().items():
            if ref not in offered[kind]:
                raise UnknownProviderError(
                    f"{path}.{kind}.provider_ref {ref!r} is not offered by this cell "
                    f"(offered: {', '.join(offered[kind]) or 'none'})",
                    field=f"{path}.{kind}.provider_ref",
                )

    def get_asr(self, ref: str) -> ASRProvider:
        return self._get(self.asr, "asr", ref)

    def get_llm(self, ref: str) -> LLMProvider:
        return self._get(self.llm, "llm", ref)

    def get_tts(self, ref: str) -> TTSProvider:
        return self._get(self.tts, "tts", ref)

    @staticmethod
    def _get(table: Mapping[str, P], kind: str, ref: str) -> P:
        try:
            return table[ref]
        except KeyError:
            raise UnknownProviderError(
                f"{kind} provider_ref {ref!r} is not offered by this cell", field=kind
            ) from None
