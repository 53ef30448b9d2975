"""The task's ``agent.config`` object, read strictly and never completed with defaults.

``full_ai`` needs llm + prompt + tts + asr + conversation; ``asr_only`` needs asr +
conversation and must not carry llm, prompt or tts. Absent optional fields stay
``None`` (the contract forbids inventing defaults); the raw object is kept as is.

A config is immutable per agent version, and every plan of a task carries the same
one, so :class:`AgentConfigCache` reads each distinct config once (keyed by its
canonical JSON text); an invalid config is never cached and is refused every time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentcall.cell.domain.errors import InvalidPlanError
from agentcall.cell.domain.fields import Reader

MAX_MS = 24 * 3600 * 1000


class AgentMode(StrEnum):
    FULL_AI = "full_ai"
    ASR_ONLY = "asr_only"


@dataclass(frozen=True)
class LLMConfig:
    provider_ref: str
    model: str | None
    temperature: float | None
    max_tokens: int | None
    timeout_ms: int | None


@dataclass(frozen=True)
class TTSConfig:
    provider_ref: str
    model: str | None
    voice: str | None
    speed: float | None
    timeout_ms: int | None


@dataclass(frozen=True)
class ASRConfig:
    provider_ref: str
    model: str | None
    language: str | None
    interim: bool | None
    timeout_ms: int | None


@dataclass(frozen=True)
class ConversationConfig:
    opening: str | None
    allow_interrupt: bool | None
    silence_timeout_ms: int | None
    max_duration_ms: int | None
    max_turns: int | None
    sentence_max_chars: int | None
    max_pending_audio_chunks: int | None


@dataclass(frozen=True)
class AgentConfig:
    agent_version_id: str
    mode: AgentMode
    asr: ASRConfig
    conversation: ConversationConfig
    llm: LLMConfig | None
    tts: TTSConfig | None
    prompt_text: str | None
    raw: Mapping[str, Any]

    def provider_refs(self) -> dict[str, str]:
        """kind -> provider_ref for every provider this config uses."""
        refs = {"asr": self.asr.provider_ref}
        if self.llm is not None:
            refs["llm"] = self.llm.provider_ref
        if self.tts is not None:
            refs["tts"] = self.tts.provider_ref
        return refs


def _llm(r: Reader) -> LLMConfig:
    return LLMConfig(
        provider_ref=r.string("provider_ref", max_len=128),
        model=r.opt_string("model", max_len=256),
        temperature=r.opt_number("temperature"),
        max_tokens=r.opt_integer("max_tokens", minimum=1, maximum=1_000_000),
        timeout_ms=r.opt_integer("timeout_ms", minimum=1, maximum=MAX_MS),
    )


def _tts(r: Reader) -> TTSConfig:
    speed = r.opt_number("speed")
    if speed is not None and not 0.1 <= speed <= 10.0:
        raise r.fail("speed", "must be between 0.1 and 10")
    return TTSConfig(
        provider_ref=r.string("provider_ref", max_len=128),
        model=r.opt_string("model", max_len=256),
        voice=r.opt_string("voice", max_len=256),
        speed=speed,
        timeout_ms=r.opt_integer("timeout_ms", minimum=1, maximum=MAX_MS),
    )


def _asr(r: Reader) -> ASRConfig:
    return ASRConfig(
        provider_ref=r.string("provider_ref", max_len=128),
        model=r.opt_string("model", max_len=256),
        language=r.opt_string("language", max_len=64),
        interim=r.opt_boolean("interim"),
        timeout_ms=r.opt_integer("timeout_ms", minimum=1, maximum=MAX_MS),
    )


def _conversation(r: Reader) -> ConversationConfig:
    return ConversationConfig(
        opening=r.opt_string("opening", max_len=4096),
        allow_interrupt=r.opt_boolean("allow_interrupt"),
        silence_timeout_ms=r.opt_integer("silence_timeout_ms", minimum=1, maximum=MAX_MS),
        max_duration_ms=r.opt_integer("max_duration_ms", minimum=1, maximum=MAX_MS),
        max_turns=r.opt_integer("max_turns", minimum=1, maximum=10_000),
        sentence_max_chars=r.opt_integer("sentence_max_chars", minimum=1, maximum=100_000),
        max_pending_audio_chunks=r.opt_integer(
            "max_pending_audio_chunks", minimum=1, maximum=1_000_000
        ),
    )


def parse_agent_config(obj: object, path: str = "agent") -> AgentConfig:
    """Read an ``agent.config`` object; raises :class:`InvalidPlanError` naming the field."""
    r = Reader(obj, path, InvalidPlanError)
    mode_text = r.string("mode", max_len=32)
    try:
        mode = AgentMode(mode_text)
    except ValueError:
        raise r.fail("mode", "must be full_ai or asr_only") from None
    if mode is AgentMode.ASR_ONLY:
        for absent in ("llm", "prompt", "tts"):
            if absent in r.obj:
                raise r.fail(absent, "must be absent when mode is asr_only")
        llm, tts, prompt = None, None, None
    else:
        llm = _llm(r.child("llm"))
        tts = _tts(r.child("tts"))
        prompt = r.child("prompt").string("text", max_len=1_000_000, allow_empty=True)
    return AgentConfig(
        agent_version_id=r.string("agent_version_id", max_len=256),
        mode=mode,
        asr=_asr(r.child("asr")),
        conversation=_conversation(r.child("conversation")),
        llm=llm,
        tts=tts,
        prompt_text=prompt,
        raw=dict(r.obj),
    )


class AgentConfigCache:
    """Bounded LRU of configs already read, keyed by their canonical JSON text.

    Equal keys mean equal JSON (types included: ``1``, ``1.0`` and ``true`` differ), so
    a hit returns exactly what :func:`parse_agent_config` would. Only successful reads
    are stored; a refused config raises on every call. ``key=None`` (a value that has no
    canonical JSON) reads without the cache.
    """

    def __init__(self, capacity: int = 256) -> None:
        if capacity < 1:
            raise ValueError("AgentConfigCache capacity must be at least 1")
        self._capacity = capacity
        self._entries: OrderedDict[str, AgentConfig] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def parse(self, obj: object, key: str | None, path: str = "agent") -> AgentConfig:
        """:func:`parse_agent_config` of ``obj``, whose canonical JSON text is ``key``."""
        if key is None:
            return parse_agent_config(obj, path)
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit
        config = parse_agent_config(obj, path)
        self._entries[key] = config
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return config
