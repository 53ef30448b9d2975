"""What the D's HTTP port (the real uvicorn server with the D's bounded protocol, on a
loopback port) does with slow, silent, oversized and numerous clients:

- a request's line and headers must arrive within the header timeout (else 408 and close),
  fit in 32 KiB (else 431), its body within the body timeout (else the connection closes);
  an idle keep-alive connection closes after the idle timeout;
- at the connection limit a new connection pushes out the oldest one without a running
  request (503), and is itself refused with 503 and ``Retry-After`` only when every
  connection runs a request: ``/readyz`` keeps answering while trickling clients fill it;
- the refusals are reported once per burst, and once more with the counts when it is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from agentcall.dispatcher.web import edge as edge_module
from agentcall.dispatcher.web.app import build_app
from agentcall.dispatcher.web.edge import Edge, EdgeLimits
from agentcall.dispatcher.web.metrics import render_edge
from agentcall.dispatcher.web.server import edge_for, serve

pytestmark = pytest.mark.integration
QUICK = EdgeLimits(header_timeout_s=1.0, body_timeout_s=1.0, idle_timeout_s=1, max_connections=50)
SLACK_S = 1.0  # scheduling on a shared two-core machine


@dataclass
class Served:
    port: int
    edge: Edge
    reports: list[tuple[str, dict[str, Any]]]
    release: threading.Event = field(default_factory=threading.Event)

    def events(self) -> list[str]:
        return [event for event, _ in self.reports]


@contextlib.contextmanager
def serving(limits: EdgeLimits, open_files: int | None = None) -> Iterator[Served]:
    """The D's app and port in a thread with its own event loop; ``/status`` waits for
    ``release`` (a request that keeps running), ``/readyz`` answers at once."""
    reports: list[tuple[str, dict[str, Any]]] = []
    edge = edge_for(
        limits, lambda level, event, facts: reports.append((event, dict(facts))), open_files
    )
    release = threading.Event()
    release.set()

    async def snapshot() -> dict[str, Any]:
        while not release.is_set():
            await asyncio.sleep(0.02)
        return {"readiness": {"ready": True, "causes": []}}

    app = build_app(snapshot, lambda: True)
    loop = asyncio.new_event_loop()
    ports: list[int] = []
    task = loop.create_task(serve(app, "127.0.0.1", 0, edge, ports.append))

    def run() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(task)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not ports and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ports, "the HTTP port did not start"
    try:
        yield Served(ports[0], edge, reports, release)
    finally:
        release.set()
        loop.call_soon_threadsafe(task.cancel)
        thread.join(10)
        loop.close()


async def _held_until_closed(
    port: int, send: bytes = b"", trickle: bytes = b""
) -> tuple[float, bytes]:
    """Connect, send ``send``, then one byte of ``trickle`` every 0.1 s: how long the
    server kept the connection open, and what it answered."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answer = b""
    try:
        if send:
            writer.write(send)
        for byte in trickle:
            writer.write(bytes([byte]))
            with contextlib.suppress(TimeoutError):
                chunk = await asyncio.wait_for(reader.read(4096), 0.1)
                if not chunk:
                    break
                answer += chunk
        while chunk := await asyncio.wait_for(reader.read(4096), 30):
            answer += chunk
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()
    return time.monotonic() - started, answer


async def _probe_readyz(port: int, until: float) -> list[tuple[int, float]]:
    """``GET /readyz`` on a new connection every 0.2 s: (status, seconds) of each."""
    seen = []
    while time.monotonic() < until:
        started = time.monotonic()
        async with httpx.AsyncClient(timeout=5) as client:
            answer = await client.get(f"http://127.0.0.1:{port}/readyz")
        seen.append((answer.status_code, time.monotonic() - started))
        await asyncio.sleep(0.2)
    return seen


async def test_300_trickling_and_silent_connections_are_cut_in_time_and_readyz_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(edge_module, "QUIET_S", 1.0)
    trickle = b"X-Slow: " + b"a" * 60  # 6 s of header at one byte per 0.1 s
    with serving(QUICK) as served:
        clients = [
            _held_until_closed(served.port, b"GET /status HTTP/1.1\r\nHost: localhost\r\n", trickle)
            if n % 2
            else _held_until_closed(served.port)
            for n in range(300)
        ]
        probes = _probe_readyz(served.port, time.monotonic() + 3)
        *held, probed = await asyncio.gather(*clients, probes)
        await asyncio.sleep(1.5)  # the quiet report comes QUIET_S after the last refusal
    assert max(seconds for seconds, _ in held) < QUICK.header_timeout_s + SLACK_S
    answers = [answer.split(b"\r\n", 1)[0] for _, answer in held]
    assert set(answers) <= {
        b"HTTP/1.1 408 Request Timeout",
        b"HTTP/1.1 503 Service Unavailable",
        b"",
    }
    assert answers.count(b"HTTP/1.1 408 Request Timeout") >= 1
    assert probed and all(status == 200 and seconds < 1.0 for status, seconds in probed), probed
    assert served.events() == ["http.edge_refusing", "http.edge_quiet"]
    counts = served.reports[1][1]["refused"]
    assert sum(counts.values()) == 300 and set(counts) <= {"headers", "evicted"}


async def test_a_slow_body_closes_the_connection_in_time() -> None:
    head = b"POST /status HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\nab"
    with serving(QUICK) as served:
        seconds, _ = await _held_until_closed(served.port, head)
    assert seconds < QUICK.body_timeout_s + SLACK_S
    assert served.events() == ["http.edge_refusing"]
    assert served.reports[0][1]["reason"] == "body"


async def test_an_idle_keep_alive_connection_is_closed() -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
    with serving(QUICK) as served:
        seconds, answer = await _held_until_closed(served.port, request)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert QUICK.idle_timeout_s - 0.2 < seconds < QUICK.idle_timeout_s + SLACK_S


async def test_headers_over_32_kib_are_refused_431() -> None:
    request = b"GET /status HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n"
    with serving(QUICK) as served:
        _, answer = await _held_until_closed(served.port, request)
    assert answer.startswith(b"HTTP/1.1 431 ")


async def test_at_the_limit_the_oldest_idle_connection_makes_room() -> None:
    limits = EdgeLimits(
        header_timeout_s=10, body_timeout_s=10, idle_timeout_s=10, max_connections=2
    )
    with serving(limits) as served:
        first = await asyncio.open_connection("127.0.0.1", served.port)
        await asyncio.sleep(0.1)
        second = await asyncio.open_connection("127.0.0.1", served.port)
        await asyncio.sleep(0.1)
        async with httpx.AsyncClient(timeout=5) as client:
            ready = await client.get(f"http://127.0.0.1:{served.port}/readyz")
        evicted = await asyncio.wait_for(first[0].read(), 5)
        second[1].write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        kept = await asyncio.wait_for(second[0].read(200), 5)
        for _, writer in (first, second):
            writer.close()
    assert ready.status_code == 200
    assert evicted.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in evicted
    assert kept.startswith(b"HTTP/1.1 200 ")


async def test_when_every_connection_runs_a_request_a_new_one_gets_503_retry_after() -> None:
    limits = EdgeLimits(
        header_timeout_s=10, body_timeout_s=10, idle_timeout_s=10, max_connections=3
    )
    with serving(limits) as served:
        served.release.clear()  # /status keeps running
        busy = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(3)]
        for _, writer in busy:
            writer.write(b"GET /status HTTP/1.1\r\nHost: localhost\r\n\r\n")
        await asyncio.sleep(0.3)
        started = time.monotonic()
        async with httpx.AsyncClient(timeout=5) as client:
            refused = await client.get(f"http://127.0.0.1:{served.port}/readyz")
        refused_in = time.monotonic() - started
        served.release.set()
        answers = [await asyncio.wait_for(reader.read(200), 5) for reader, _ in busy]
        for _, writer in busy:
            writer.close()
        await asyncio.sleep(0.2)
        metrics = render_edge(served.edge).decode()
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert "connection limit" in refused.text and refused_in < 1.0
    assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in answers)
    assert served.events() == ["http.edge_refusing"]
    assert served.reports[0][1] == {"reason": "limit", "open": 3, "limit": 3}
    assert 'dispatcher_http_refused_connections_total{reason="limit"} 1.0' in metrics
    assert "dispatcher_http_connection_limit 3.0" in metrics
    assert "dispatcher_http_connections 0.0" in metrics


async def test_the_limit_is_lowered_under_a_small_open_file_limit() -> None:
    limits = EdgeLimits(
        header_timeout_s=10, body_timeout_s=10, idle_timeout_s=10, max_connections=1000
    )
    with serving(limits, open_files=8) as served:
        silent = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(10)]
        async with httpx.AsyncClient(timeout=5) as client:
            ready = await client.get(f"http://127.0.0.1:{served.port}/readyz")
        open_now = len(served.edge.open)
        for _, writer in silent:
            writer.close()
    assert served.edge.max_connections == 4 and open_now <= 4
    assert ready.status_code == 200
    assert served.reports[0] == (
        "http.connection_limit_lowered",
        {"configured": 1000, "kept": 4, "open_file_limit": 8},
    )
