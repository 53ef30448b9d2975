"""The HTTP port of a real D (``dispatcher run`` with mocksaas, a sim cell and RabbitMQ)
holds nothing for a slow client: 300 connections, half silent and half trickling their
headers one byte at a time, are each cut within the configured header timeout, while
``GET /readyz`` on new connections keeps answering the readiness verdict at once, even with
the D's open-file limit lowered to 256 (so that 300 held connections would starve it).
The refusals are logged once for the burst, not once per connection."""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import time

import httpx
import pytest

from tests.acceptance.dispatcher.harness import Scenario

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]
HEADER_TIMEOUT_S = 2.0
SLACK_S = 1.5  # scheduling on a shared two-core machine
TRICKLE = b"X-Slow: " + b"a" * 50  # 10 s of header at one byte per 0.2 s
OPEN_FILES = 256


async def _held(port: int, trickle: bytes) -> float:
    """Connect, then send ``trickle`` one byte per 0.2 s (nothing when empty): how long the
    D kept the connection open."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        if trickle:
            writer.write(b"GET /status HTTP/1.1\r\nHost: localhost\r\n")
        for byte in trickle:
            writer.write(bytes([byte]))
            with contextlib.suppress(TimeoutError):
                if not await asyncio.wait_for(reader.read(4096), 0.2):
                    return time.monotonic() - started
        while await asyncio.wait_for(reader.read(4096), 30):
            pass
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()
    return time.monotonic() - started


async def _probes(port: int, seconds: float) -> list[tuple[int, float, bool]]:
    """``GET /readyz`` on a new connection every 0.25 s: status, seconds, a verdict body."""
    seen = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=5) as client:
                answer = await client.get(f"http://127.0.0.1:{port}/readyz")
            verdict = "ready" in answer.json()
            seen.append((answer.status_code, time.monotonic() - started, verdict))
        except (httpx.HTTPError, ValueError):
            seen.append((0, time.monotonic() - started, False))
        await asyncio.sleep(0.25)
    return seen


async def test_300_trickling_connections_are_cut_in_time_and_readyz_keeps_answering(
    scenario: Scenario,
) -> None:
    s = scenario
    s.sip(max_concurrent_calls=10)
    s.start(
        DISPATCHER_HTTP_HEADER_TIMEOUT_S=str(HEADER_TIMEOUT_S),
        DISPATCHER_HTTP_BODY_TIMEOUT_S="2",
        DISPATCHER_HTTP_IDLE_TIMEOUT_S="1",
        DISPATCHER_HTTP_MAX_CONNECTIONS="60",
    )
    assert s.proc is not None and s.proc.proc is not None
    resource.prlimit(s.proc.proc.pid, resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
    clients = [_held(s.http_port, TRICKLE if n % 2 else b"") for n in range(300)]
    *held, probed = await asyncio.gather(*clients, _probes(s.http_port, 6))
    assert max(held) < HEADER_TIMEOUT_S + SLACK_S, sorted(held)[-5:]
    assert probed and all(ok and seconds < 1.5 for _, seconds, ok in probed), probed
    assert {status for status, _, _ in probed} == {200}, probed
    assert httpx.get(s.status_url, timeout=5).status_code == 200
    metrics = httpx.get(s.status_url.replace("/status", "/metrics"), timeout=5).text
    refused = [
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("dispatcher_http_refused_connections_total{")
    ]
    assert sum(refused) == 300, refused
    events = [json.loads(line).get("msg") for line in s.log().splitlines() if '"msg"' in line]
    assert events.count("http.edge_refusing") == 1, "one line for the burst"
