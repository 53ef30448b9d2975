"""Reading the task's agent.config strictly (D-CFG-2: never invent defaults)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.cell.agent.config import AgentMode, parse_agent_config
from agentcall.cell.agent.mock import mock_registry
from agentcall.cell.agent.providers import ProviderRegistry
from agentcall.cell.domain.errors import InvalidPlanError, UnknownProviderError
from tests.support.agent_configs import ASR_ONLY, FULL_AI, asr_only, full_ai


def test_full_ai_is_read_with_all_sections() -> None:
    config = parse_agent_config(FULL_AI)
    assert config.mode is AgentMode.FULL_AI
    assert config.llm is not None and config.llm.max_tokens == 256
    assert config.tts is not None and config.tts.voice == "mock-neutral"
    assert config.prompt_text == "Mock prompt."
    assert config.conversation.opening == "Hello, this is a test call."
    assert config.raw == FULL_AI


def test_asr_only_keeps_absent_fields_absent_d_cfg_2() -> None:
    """D-CFG-2: asr_only has no llm/prompt/tts and no invented opening."""
    config = parse_agent_config(ASR_ONLY)
    assert config.mode is AgentMode.ASR_ONLY
    assert (config.llm, config.tts, config.prompt_text) == (None, None, None)
    assert config.conversation.opening is None
    assert config.asr.language == "zh-CN"


def _without(config: dict[str, Any], *keys: str) -> dict[str, Any]:
    out = dict(config)
    for key in keys:
        out.pop(key)
    return out


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (_without(FULL_AI, "llm"), "agent.llm"),
        (_without(FULL_AI, "tts"), "agent.tts"),
        (_without(FULL_AI, "prompt"), "agent.prompt"),
        (_without(FULL_AI, "asr"), "agent.asr"),
        (_without(FULL_AI, "conversation"), "agent.conversation"),
        ({**ASR_ONLY, "llm": FULL_AI["llm"]}, "agent.llm"),
        ({**ASR_ONLY, "tts": FULL_AI["tts"]}, "agent.tts"),
        ({**FULL_AI, "mode": "chatty"}, "agent.mode"),
        (full_ai(max_turns=0), "agent.conversation.max_turns"),
        (full_ai(silence_timeout_ms="3s"), "agent.conversation.silence_timeout_ms"),
        (asr_only(allow_interrupt="yes"), "agent.conversation.allow_interrupt"),
        ({**FULL_AI, "tts": {**FULL_AI["tts"], "speed": 50}}, "agent.tts.speed"),
        ({**FULL_AI, "llm": {**FULL_AI["llm"], "provider_ref": ""}}, "agent.llm.provider_ref"),
        ("not an object", "agent"),
    ],
)
def test_invalid_agent_config_names_the_field(config: Any, field: str) -> None:
    with pytest.raises(InvalidPlanError) as info:
        parse_agent_config(config)
    assert info.value.field == field


def test_registry_refuses_unknown_provider_ref() -> None:
    config = parse_agent_config({**FULL_AI, "tts": {**FULL_AI["tts"], "provider_ref": "acme"}})
    with pytest.raises(UnknownProviderError) as info:
        mock_registry().check(config)
    assert info.value.field == "agent.tts.provider_ref"


def test_registry_accepts_mock_everywhere() -> None:
    mock_registry().check(parse_agent_config(FULL_AI))
    mock_registry().check(parse_agent_config(ASR_ONLY))
    assert mock_registry().names() == {"asr": ["mock"], "llm": ["mock"], "tts": ["mock"]}


def test_empty_registry_refuses_asr() -> None:
    with pytest.raises(UnknownProviderError):
        ProviderRegistry().check(parse_agent_config(ASR_ONLY))
