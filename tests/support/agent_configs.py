"""Agent configs as the task config carries them (contract §2.2 and §2.3)."""

from __future__ import annotations

import copy
from typing import Any

FULL_AI: dict[str, Any] = {
    "agent_version_id": "agent-version-mock",
    "immutable": True,
    "mode": "full_ai",
    "llm": {
        "provider_ref": "mock",
        "model": "mock-chat-v1",
        "temperature": 0.2,
        "max_tokens": 256,
        "timeout_ms": 5000,
    },
    "prompt": {"text": "Mock prompt.", "allowed_variables": [], "max_bytes": 32768},
    "tts": {
        "provider_ref": "mock",
        "model": "mock-tts-v1",
        "voice": "mock-neutral",
        "speed": 1.0,
        "format": {"encoding": "pcm_s16le", "sample_rate_hz": 16000, "channels": 1},
        "timeout_ms": 5000,
    },
    "asr": {
        "provider_ref": "mock",
        "language": "zh-CN",
        "input": {
            "encoding": "pcm_s16le",
            "sample_rate_hz": 16000,
            "channels": 1,
            "sample_width_bytes": 2,
        },
        "interim": True,
        "timeout_ms": 5000,
    },
    "conversation": {
        "opening": "Hello, this is a test call.",
        "allow_interrupt": True,
        "silence_timeout_ms": 3000,
        "max_duration_ms": 120000,
        "max_turns": 20,
        "sentence_max_chars": 80,
        "max_pending_audio_chunks": 32,
    },
}

ASR_ONLY: dict[str, Any] = {
    "agent_version_id": "agent_asr_v1",
    "immutable": True,
    "mode": "asr_only",
    "asr": {
        "provider_ref": "mock",
        "model": "mock-asr-v1",
        "language": "zh-CN",
        "interim": True,
        "timeout_ms": 5000,
    },
    "conversation": {
        "allow_interrupt": False,
        "silence_timeout_ms": 3000,
        "max_duration_ms": 120000,
        "max_turns": 20,
        "sentence_max_chars": 80,
        "max_pending_audio_chunks": 32,
    },
}


def full_ai(**conversation: Any) -> dict[str, Any]:
    config = copy.deepcopy(FULL_AI)
    config["conversation"].update(conversation)
    return config


def asr_only(**conversation: Any) -> dict[str, Any]:
    config = copy.deepcopy(ASR_ONLY)
    config["conversation"].update(conversation)
    return config
