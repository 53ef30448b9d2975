"""A local OpenAI-compatible ``/chat/completions`` server that writes at a realistic pace.

Replies are split into tokens (words with their leading space, punctuation apart)
produced ``ttft_s`` after the request and then ``tokens_per_s`` per second. With
``"stream": true`` each token is sent at once as a server-sent event (chunked
HTTP/1.1, keep-alive), ``data: [DONE]`` at the end; without it the whole reply is
sent once the last token would have been written, as a real server does. Used by
the provider tests and ``bench/voice_latency.py``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_REPLY = (
    "Thanks for asking, I can help with that. Our offer gives you two months free, "
    "then the plan costs ten dollars a month. Would you like me to send the details "
    "by text message?"
)


def tokens_of(text: str) -> list[str]:
    """About one token per word, as a chat model's tokenizer gives for English."""
    return re.findall(r" ?[A-Za-z0-9']+| ?[^A-Za-z0-9' ]", text)


@dataclass
class StubState:
    reply: str = DEFAULT_REPLY
    ttft_s: float = 0.3
    tokens_per_s: float = 30.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    connections: set[tuple[str, int]] = field(default_factory=set)
    aborted: int = 0  # streams the client closed before the end
    reply_to: Callable[[dict[str, Any]], str] | None = None  # the reply from the request


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: StubState

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.state.requests.append(body)
        self.state.connections.add(self.client_address[:2])
        reply = self.state.reply if self.state.reply_to is None else self.state.reply_to(body)
        tokens = tokens_of(reply)
        start = time.monotonic() + self.state.ttft_s
        if body.get("stream"):
            self._stream(tokens, start)
        else:
            time.sleep(max(0.0, start + len(tokens) / self.state.tokens_per_s - time.monotonic()))
            message = {"role": "assistant", "content": reply}
            try:
                self._json({"choices": [{"index": 0, "message": message}]})
            except (BrokenPipeError, ConnectionResetError):  # the client gave up
                self.state.aborted += 1
                self.close_connection = True

    def _json(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, tokens: list[str], start: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            first = {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}
            self._chunk(b"data: " + json.dumps(first).encode() + b"\n\n")
            for i, token in enumerate(tokens):
                time.sleep(max(0.0, start + i / self.state.tokens_per_s - time.monotonic()))
                delta = {"choices": [{"index": 0, "delta": {"content": token}}]}
                self._chunk(b"data: " + json.dumps(delta).encode() + b"\n\n")
            self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.state.aborted += 1
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        return


@contextmanager
def llm_stub(state: StubState | None = None) -> Iterator[tuple[str, StubState]]:
    """(base URL, state) of a stub server running in a thread until the block ends."""
    state = state or StubState()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()
