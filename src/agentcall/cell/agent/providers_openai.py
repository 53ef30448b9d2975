"""LLM provider for any OpenAI-compatible ``/chat/completions`` endpoint (httpx).

Base URL and API key come from configuration (never from the task config); the
task's model, temperature, max_tokens and timeout_ms are sent as given (absent
ones are omitted, never invented). The key is never logged.

One HTTP client per provider, kept for the life of the process (connections are
reused from turn to turn: no TCP/TLS set-up per reply). :meth:`OpenAIChatLLM.stream`
asks for ``"stream": true`` and yields the text deltas of the server-sent events
(``data: {...}`` lines, ``data: [DONE]`` at the end) as they arrive; cancelling the
iteration closes the response, so a barge-in stops the generation at once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
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


DONE = "[DONE]"


def sse_delta(line: str) -> str | None:
    """The text delta of one server-sent-event line (pure): ``""`` for a line without
    text (comments, role-only chunks, blank lines), ``None`` at ``data: [DONE]``;
    raises ProviderError on a data line that is not a chat-completion chunk."""
    if not line.startswith("data:"):
        return ""
    data = line[5:].strip()
    if data == DONE:
        return None
    try:
        choices = json.loads(data)["choices"]
    except (ValueError, KeyError, TypeError):
        raise ProviderError("LLM stream sent a data line that is not a chunk") from None
    if not choices:
        return ""
    try:
        content = choices[0].get("delta", {}).get("content")
    except AttributeError:
        raise ProviderError("LLM stream chunk lacks choices[0].delta") from None
    return content if isinstance(content, str) else ""


async def _drain(lines: AsyncIterator[str], limit_s: float = 1.0) -> None:
    """Read what follows ``[DONE]`` (the end of the chunked body), for at most ``limit_s``;
    a response not read to its end cannot be reused for the next turn."""

    async def rest() -> None:
        async for _ in lines:
            pass

    try:
        await asyncio.wait_for(rest(), limit_s)
    except TimeoutError:
        pass  # the server keeps the stream open: this connection is not reused


class OpenAIChatLLM:
    def __init__(self, settings: OpenAISettings, transport: httpx.AsyncBaseTransport | None = None):
        self.settings = settings
        self._transport = transport
        self.clients_made = 0
        # made now, not at the first turn: loading the TLS trust store takes ~0.1-1 s
        self._client = self._new_client()

    def _new_client(self) -> httpx.AsyncClient:
        self.clients_made += 1
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
        return httpx.AsyncClient(transport=self._transport, limits=limits)

    def _http(self) -> httpx.AsyncClient:
        if self._client.is_closed:
            self._client = self._new_client()
        return self._client

    def _request(
        self, messages: Sequence[ChatMessage], config: LLMConfig, stream: bool
    ) -> tuple[str, dict[str, Any], dict[str, str], float]:
        body = chat_request(messages, config, self.settings.default_model)
        if stream:
            body["stream"] = True
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        timeout = (config.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
        url = self.settings.base_url.rstrip("/") + "/chat/completions"
        return url, body, headers, timeout

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(
        self, messages: Sequence[ChatMessage], config: LLMConfig
    ) -> AsyncIterator[str]:
        url, body, headers, timeout = self._request(messages, config, stream=True)
        try:
            request = self._http().stream("POST", url, json=body, headers=headers, timeout=timeout)
            async with request as response:
                if response.status_code != 200:
                    raise ProviderError(f"LLM answered HTTP {response.status_code}")
                lines = response.aiter_lines()
                async for line in lines:
                    delta = sse_delta(line)
                    if delta is None:
                        break
                    if delta:
                        yield delta
                await _drain(lines)  # read to the end: the connection goes back to the pool
        except httpx.TimeoutException:
            raise ProviderTimeoutError(f"LLM did not answer within {timeout:.1f} s") from None
        except httpx.HTTPError as exc:
            raise ProviderError(f"LLM request failed: {type(exc).__name__}") from exc

    async def reply(self, messages: Sequence[ChatMessage], config: LLMConfig) -> str:
        url, body, headers, timeout = self._request(messages, config, stream=False)
        try:
            response = await self._http().post(url, json=body, headers=headers, timeout=timeout)
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
