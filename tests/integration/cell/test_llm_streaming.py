"""The OpenAI-compatible LLM provider streams against a local stub server that writes
at a realistic pace: deltas as they are written, one HTTP client and one kept-alive
connection for every turn, and a cancelled stream closes the response at once."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentcall.cell.agent.config import LLMConfig
from agentcall.cell.agent.providers import ChatMessage
from agentcall.cell.agent.providers_openai import OpenAIChatLLM, OpenAISettings
from tests.integration.cell.llm_stub import StubState, llm_stub, tokens_of

pytestmark = pytest.mark.integration

LLM = LLMConfig("stub", "stub-model", None, 100, 5000)
ASK = [ChatMessage("user", "What is the offer?")]


async def test_stream_yields_deltas_as_written_and_reuses_one_connection() -> None:
    state = StubState(reply="Yes, it is free. Call us.", ttft_s=0.2, tokens_per_s=20)
    with llm_stub(state) as (url, state):
        llm = OpenAIChatLLM(OpenAISettings(url))
        for _ in range(2):
            started, arrivals, text = time.monotonic(), [], ""
            async for delta in llm.stream(ASK, LLM):
                arrivals.append(time.monotonic() - started)
                text += delta
            assert text == state.reply
            assert len(arrivals) == len(tokens_of(state.reply))
            assert 0.15 <= arrivals[0] <= 1.0  # the first token, not the whole reply
            assert arrivals[-1] - arrivals[0] >= 0.25  # spread at the stub's pace (0.4 s)
        assert await llm.reply(ASK, LLM) == state.reply
        await llm.aclose()
    assert [r.get("stream") for r in state.requests] == [True, True, None]
    assert llm.clients_made == 1 and len(state.connections) == 1


async def test_cancelled_stream_closes_the_response() -> None:
    state = StubState(ttft_s=0.05, tokens_per_s=20)
    with llm_stub(state) as (url, state):
        llm = OpenAIChatLLM(OpenAISettings(url))

        async def first_words() -> None:
            stream = llm.stream(ASK, LLM)
            try:
                async for _ in stream:
                    await asyncio.sleep(10)  # a barge-in cancels us here
            finally:
                await stream.aclose()  # as the agent's speaker does

        task = asyncio.create_task(first_words())
        await asyncio.sleep(0.3)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for _ in range(50):  # the server notices on its next write
            if state.aborted:
                break
            await asyncio.sleep(0.05)
        await llm.aclose()
    assert state.aborted == 1
