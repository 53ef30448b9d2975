"""What the HTTP edge answers when the client or the server misbehaves:

- request line and headers must arrive in time and fit in 32 KiB (408, 431), the body must
  arrive in time (the connection is closed): a slow client holds nothing forever;
- a client that leaves before its answer is counted as 499, never as a 503 or an error;
- an unexpected exception inside the server is 500 INTERNAL with a request ID (logged and
  counted), never 503 "retry"; a database failure stays 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import uvicorn
from starlette.testclient import TestClient

from agentcall.orbit.api import control_routes
from agentcall.orbit.api.transport import CoalescingHttpToolsProtocol
from agentcall.orbit.assembly.server import create_app
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade
from tests.integration.orbit.wire import error
from tests.support.orbit_server import Tenant
from tests.support.ports import free_port

pytestmark = pytest.mark.integration


class QuickLimits(CoalescingHttpToolsProtocol):
    header_timeout_s = 0.5
    body_timeout_s = 0.5


async def _echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Reads the whole body, answers its length."""
    if scope["type"] != "http":
        return
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


class LongBodyLimit(CoalescingHttpToolsProtocol):
    header_timeout_s = 0.4
    body_timeout_s = 5.0


@contextlib.contextmanager
def _serving(protocol: type[CoalescingHttpToolsProtocol]) -> Iterator[int]:
    """uvicorn with this protocol, in a thread: its port."""
    port = free_port()
    config = uvicorn.Config(
        _echo, host="127.0.0.1", port=port, http=protocol, log_config=None, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def quick_server() -> Iterator[int]:
    """uvicorn with Orbit's protocol and half-second limits, in a thread."""
    with _serving(QuickLimits) as port:
        yield port


def _exchange(port: int, chunks: list[bytes], pause: float = 0.0) -> tuple[bytes, float]:
    """Send `chunks` (pausing between them), then read until the server closes: (what it
    answered, seconds from the first byte to the close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        started = time.monotonic()
        with contextlib.suppress(OSError):
            for chunk in chunks:
                sock.sendall(chunk)
                time.sleep(pause)
        answer = b""
        with contextlib.suppress(OSError):
            while data := sock.recv(65536):
                answer += data
        return answer, time.monotonic() - started


def test_headers_that_never_end_are_cut_with_408(quick_server: int) -> None:
    answer, seconds = _exchange(quick_server, [b"GET / HTTP/1.1\r\nHost: x\r\n"])
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert seconds < 3


def test_a_connection_that_sends_nothing_is_closed(quick_server: int) -> None:
    answer, seconds = _exchange(quick_server, [])
    assert answer.startswith(b"HTTP/1.1 408") and seconds < 3


def test_headers_sent_a_byte_at_a_time_are_cut(quick_server: int) -> None:
    """Slowloris: every byte resets no timer; the whole head must arrive in time."""
    head = b"GET / HTTP/1.1\r\nX: aaaaaaa"  # 24 bytes over ~1 s, the limit being 0.5 s
    answer, seconds = _exchange(quick_server, [bytes([b]) for b in head], pause=0.04)
    assert answer.startswith(b"HTTP/1.1 408") and seconds < 3


def test_a_body_that_never_ends_is_cut(quick_server: int) -> None:
    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
    answer, seconds = _exchange(quick_server, [head, b"x" * 10])
    assert answer == b"" and seconds < 3  # closed; the app saw the client gone


def test_keep_alive_requests_still_work(quick_server: int) -> None:
    """The limits apply per request: two requests on one connection, in time, both answered."""
    request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
    with socket.create_connection(("127.0.0.1", quick_server), timeout=5) as sock:
        for _ in range(2):
            sock.sendall(request)
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            time.sleep(0.3)


def test_after_a_slow_body_the_next_requests_headers_keep_their_own_limit() -> None:
    """The limits share one timer per connection. A first request whose body took longer
    than the header limit moves that timer to the (later) body limit; the next request's
    headers must still be cut at their own, earlier limit, not when the body's would end."""
    with _serving(LongBodyLimit) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(10)
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n")
        time.sleep(0.8)  # past the header limit, well within the body's
        sock.sendall(b"abc")
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers that never end
        started, answer = time.monotonic(), b""
        with contextlib.suppress(OSError):
            while data := sock.recv(65536):
                answer += data
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert time.monotonic() - started < 2.5  # the header limit (0.4 s), not the body's (5 s)


def test_a_body_arriving_with_its_headers_does_not_count_as_headers(
    quick_server: int,
) -> None:
    """Headers and a 200 KB body in one send (a loaded machine reads them in one chunk): only
    the bytes up to the blank line count against the 32 KiB of the request line and headers.
    They used to count the whole chunk, and a valid request got 431."""
    body = b"x" * 200_000
    for split in (0, 1, 2, 3):  # the blank line whole in one chunk, or cut across two
        head = b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
        request = head % len(body) + body
        cut = len(head % len(body)) - split
        answer, _ = _exchange(quick_server, [request[:cut], request[cut:]] if split else [request])
        assert answer.startswith(b"HTTP/1.1 200"), (split, answer[:200])
        assert b"\r\n200000\r\n" in answer, (split, answer[-50:])  # the body's length, chunked


def test_a_200_kb_header_is_refused_with_431(server_url: str) -> None:
    """Against `orbit serve` itself."""
    port = int(server_url.rsplit(":", 1)[1])
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
    answer, _ = _exchange(port, [head])
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert httpx.get(f"{server_url}/healthz").status_code == 200  # the server goes on


def _count(metrics: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def test_a_client_leaving_is_499_not_503_nor_an_error(
    http: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    before = (await http.get("/metrics")).text
    port = int(server_url.rsplit(":", 1)[1])
    head = (
        f"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {tenant.token}\r\n"
        "Content-Type: application/json\r\nIdempotency-Key: leaving\r\n"
        "Content-Length: 1000\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head + b'{"queue_id":')
        await asyncio.sleep(0.2)
    await asyncio.sleep(0.3)
    after = (await http.get("/metrics")).text
    name = "orbit_http_requests_total"
    assert _count(after, name, route="submit", status="499") > _count(
        before, name, route="submit", status="499"
    )
    for status in ("500", "503"):
        assert _count(after, name, status=status) == _count(before, name, status=status)
    errors = "orbit_log_messages_total"
    assert _count(after, errors, level="error") == _count(before, errors, level="error")


@pytest.fixture
def local_app(tmp_path: Path) -> Iterator[tuple[TestClient, str, str]]:
    """The app in this process over a fresh SQLite file: (client, token, queue ID)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'edges.db'}"

    async def prepare() -> tuple[str, str]:
        db = Database.open(url)
        try:
            await upgrade(db)
            made = await Admin(db).init("edges", "main")
            return made.token, made.queue_id
        finally:
            await db.close()

    token, queue_id = asyncio.run(prepare())
    with TestClient(create_app(Database.open(url))) as client:
        yield client, token, queue_id


RESOLVE = {
    "expected_revision": "1",
    "outcome": "failed",
    "reason": "r",
    "error": {"code": "c", "message": "m"},
}


def _resolve(client: TestClient, token: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "k"}
    return client.post(f"/v1/tasks/{'1' * 32}:resolve", json=RESOLVE, headers=headers)


def test_an_unexpected_exception_is_500_internal_not_503(
    local_app: tuple[TestClient, str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, token, _ = local_app

    def broken(body: object) -> object:
        raise TypeError("unhashable type: 'dict'")

    monkeypatch.setattr(control_routes, "parse_resolve", broken)
    with caplog.at_level(logging.ERROR, logger="orbit"):
        response = _resolve(client, token)
    message = error(response, 500, "INTERNAL")
    request_id = response.json()["request_id"]
    assert request_id in message and "will not help" in message
    assert any(r.levelno == logging.ERROR and r.exc_info for r in caplog.records)
    metrics = client.get("/metrics").text
    assert _count(metrics, "orbit_http_requests_total", route="resolve", status="500") == 1
    assert _count(metrics, "orbit_log_messages_total", level="error") >= 1


def test_a_database_failure_stays_503(
    local_app: tuple[TestClient, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, token, _ = local_app

    async def down(*args: object) -> object:
        raise sa.exc.OperationalError("SELECT 1", {}, OSError("connection refused"))

    monkeypatch.setattr(control_routes, "resolve_task", down)
    assert "retry" in error(_resolve(client, token), 503, "UNAVAILABLE")
