"""Real voice-agent providers: OpenAI-compatible LLM against a local stub server,
espeak-ng TTS and pocketsphinx ASR offline (Debian espeak-ng; the model ships in
the pocketsphinx wheel)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentcall.cell.agent.config import ASRConfig, LLMConfig, TTSConfig
from agentcall.cell.agent.providers import ChatMessage, Utterance
from agentcall.cell.agent.providers_errors import ProviderError, ProviderTimeoutError
from agentcall.cell.agent.providers_espeak import EspeakTTS
from agentcall.cell.agent.providers_openai import OpenAIChatLLM, OpenAISettings
from agentcall.cell.agent.providers_sphinx import PocketsphinxASR
from agentcall.cell.media import g711

pytestmark = pytest.mark.integration


class Stub(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []
    mode = "ok"

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Stub.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if Stub.mode == "slow":
            threading.Event().wait(1.0)
        status, payload = (
            (500, {"error": "boom"})
            if Stub.mode == "error"
            else (
                200,
                {"choices": [{"message": {"role": "assistant", "content": " Sure, noted. "}}]},
            )
        )
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def stub_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Stub.seen, Stub.mode = [], "ok"
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


LLM = LLMConfig("openai-main", "gpt-test", 0.2, 64, 500)


async def test_llm_sends_task_settings_and_returns_the_reply(stub_url: str) -> None:
    llm = OpenAIChatLLM(OpenAISettings(stub_url, api_key="sk-test"))
    messages = [ChatMessage("system", "Be brief."), ChatMessage("user", "Call me later")]
    assert await llm.reply(messages, LLM) == "Sure, noted."
    sent = Stub.seen[0]
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer sk-test"
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("gpt-test", 0.2, 64)
    assert sent["messages"][1] == {"role": "user", "content": "Call me later"}


async def test_llm_omits_absent_settings(stub_url: str) -> None:
    llm = OpenAIChatLLM(OpenAISettings(stub_url, default_model="fallback"))
    await llm.reply([ChatMessage("user", "hi")], LLMConfig("x", None, None, None, None))
    assert "temperature" not in Stub.seen[0] and "max_tokens" not in Stub.seen[0]
    assert Stub.seen[0]["model"] == "fallback" and Stub.seen[0]["auth"] is None


async def test_llm_errors_and_timeout(stub_url: str) -> None:
    llm = OpenAIChatLLM(OpenAISettings(stub_url))
    Stub.mode = "error"
    with pytest.raises(ProviderError, match="HTTP 500"):
        await llm.reply([ChatMessage("user", "hi")], LLM)
    Stub.mode = "slow"
    with pytest.raises(ProviderTimeoutError):
        await llm.reply([ChatMessage("user", "hi")], LLMConfig("x", "m", None, None, 200))


async def test_espeak_speech_through_pcma_is_recognised_offline() -> None:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    speech = await EspeakTTS().synthesize("yes", TTSConfig("espeak-ng", None, "en-us", 0.8, 5000))
    assert speech.sample_rate_hz == 8000 and 300 < speech.duration_ms < 2000
    line = g711.decode(g711.encode(speech.pcm))  # what the callee's phone line carries
    asr = PocketsphinxASR()
    heard = await asr.transcribe(
        Utterance(line, 8000), ASRConfig("pocketsphinx", None, "en-US", False, 10_000)
    )
    assert heard.final and heard.text.lower() in ("yes", "yeah")
