"""LLM provider for any OpenAI-compatible ``/chat/completions`` endpoint (httpx).

Base URL and API key come from configuration (never from the task config); the
task's model, temperature, max_tokens and timeout_ms are sent as given (absent
ones are omitted, never invented). The key is never logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from agentcall.cell.agent.config import LLMConfig
from agentcall.cell.agent.providers import ChatMessage
from agentcall.cell.agent.providers_errors import (
    ProviderConfigError,
    ProviderError,
    ProviderTimeoutError,
)

DEFAULT_TIMEOUT_MS = 10_000
ROLES = {"system": "system", "user": "user", "assistant": "assistant", "agent": "assistant"}


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str  # e.g. https://api.example.com/v1
    api_key: str | None = None
    default_model: str | None = None

    def __repr__(self) -> str:
        return f"OpenAISettings(base_url={self.base_url!r}, api_key=***)"


def chat_request(
    messages: Sequence[ChatMessage], config: LLMConfig, default_model: str | None
) -> dict[str, Any]:
    """The JSON body (pure)."""
    model = config.model or default_model
    if model is None:
        raise ProviderConfigError(f"LLM {config.provider_ref!r}: no model in the task or settings")
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {"role": ROLES.get(m.role, "user"), "content": m.text} for m in messages if m.text
        ],
    }
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    return body


def reply_text(payload: object) -> str:
    """The first choice's message content; raises ProviderError on another shape."""
    try:
        content = payload["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        raise ProviderError("LLM answer lacks choices[0].message.content") from None
    if not isinstance(content, str):
        raise ProviderError("LLM answer content is not a string")
    return content.strip()


class OpenAIChatLLM:
    def __init__(self, settings: OpenAISettings, transport: httpx.AsyncBaseTransport | None = None):
        self.settings = settings
        self._transport = transport

    async def reply(self, messages: Sequence[ChatMessage], config: LLMConfig) -> str:
        body = chat_request(messages, config, self.settings.default_model)
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        timeout = (config.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
        url = self.settings.base_url.rstrip("/") + "/chat/completions"
        try:
            async with httpx.AsyncClient(timeout=timeout, transport=self._transport) as client:
                response = await client.post(url, json=body, headers=headers)
        except httpx.TimeoutException:
            raise ProviderTimeoutError(f"LLM did not answer within {timeout:.1f} s") from None
        except httpx.HTTPError as exc:
            raise ProviderError(f"LLM request failed: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise ProviderError(f"LLM answered HTTP {response.status_code}")
        try:
            payload = response.json()
        except ValueError:
            raise ProviderError("LLM answer is not JSON") from None
        return reply_text(payload)
