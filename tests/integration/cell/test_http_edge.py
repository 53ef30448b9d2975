"""The cell's HTTP edge bounds what slow or hostile clients hold (``CELL_HTTP_*``):

- trickling request heads are answered 408 and closed, trickling bodies are closed, each
  within its timeout, while the API keeps answering everyone else;
- an idle keep-alive connection is closed after its timeout;
- one connection more than the limit is answered 503 with the reason, and the cell answers
  again once connections close;
- a request head over 32 KiB is answered 431.

The limits come from the environment, as an operator sets them, on a real ``cell serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .harness import CellProcess
from .helpers import plan, unique

pytestmark = pytest.mark.integration

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.0
MARGIN_S = 2.0  # a connection cut later than its timeout plus this is not cut by the limit


@contextlib.contextmanager
def _cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> Iterator[CellProcess]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    process = CellProcess(tmp_path / "data")
    process.start()
    try:
        yield process
    finally:
        assert process.stop() == 0, process.log.read_text()[-2000:]


async def _open(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def _trickle(port: int, head: bytes, drip: bytes) -> tuple[float, bytes]:
    """Send ``head``, then ``drip`` one byte at a time every 0.2 s until the cell closes
    the connection: how long the connection lived, and what the cell answered."""
    reader, writer = await _open(port)
    started = time.monotonic()
    writer.write(head)
    answer = b""

    async def drip_bytes() -> None:
        with contextlib.suppress(ConnectionError, OSError):
            for i in range(len(drip)):
                writer.write(drip[i : i + 1])
                await writer.drain()
                await asyncio.sleep(0.2)

    dripping = asyncio.create_task(drip_bytes())
    try:
        async with asyncio.timeout(HEADER_TIMEOUT_S + BODY_TIMEOUT_S + 3 * MARGIN_S):
            with contextlib.suppress(ConnectionError):
                while chunk := await reader.read(4096):
                    answer += chunk
    except TimeoutError:
        pass
    finally:
        dripping.cancel()
        writer.close()
    return time.monotonic() - started, answer


async def _api_answers(url: str, until: asyncio.Event) -> list[float]:
    """Ask /healthz and originate calls while the slow clients trickle: each latency."""
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=5.0) as http:
        while not until.is_set():
            started = time.monotonic()
            assert (await http.get("/healthz")).status_code == 200
            body = plan(unique("answer")).to_json()
            assert (await http.post("/v1/calls", json=body)).status_code == 201
            latencies.append(time.monotonic() - started)
            await asyncio.sleep(0.1)
    return latencies


async def test_slow_clients_are_cut_within_the_timeouts_while_the_api_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "CELL_HTTP_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        "CELL_HTTP_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
    }
    with _cell(tmp_path, monkeypatch, **env) as cell:
        heads = [
            _trickle(cell.port, b"GET /healthz HTTP/1.1\r\n", b"x-slow: " + b"a" * 200)
            for _ in range(40)
        ]
        post = b"POST /v1/calls HTTP/1.1\r\nhost: cell\r\ncontent-type: application/json\r\n"
        bodies = [
            _trickle(cell.port, post + b"content-length: 500\r\n\r\n", b"{" * 200)
            for _ in range(20)
        ]
        done = asyncio.Event()
        api = asyncio.create_task(_api_answers(cell.url, done))
        cut = await asyncio.gather(*heads, *bodies)
        done.set()
        latencies = await api
    head_cuts, body_cuts = cut[:40], cut[40:]
    for lived, answer in head_cuts:
        assert lived < HEADER_TIMEOUT_S + MARGIN_S, (lived, answer)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
    for lived, answer in body_cuts:
        assert lived < BODY_TIMEOUT_S + MARGIN_S, (lived, answer)
    assert latencies and max(latencies) < 1.0, latencies


async def test_an_idle_keep_alive_connection_is_closed_after_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _cell(tmp_path, monkeypatch, CELL_HTTP_KEEP_ALIVE_S="0.5") as cell:
        reader, writer = await _open(cell.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: cell\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        async with asyncio.timeout(MARGIN_S):
            while await reader.read(4096):
                pass  # the body, then the end of the connection
        assert time.monotonic() - started < MARGIN_S
        writer.close()


async def test_a_connection_over_the_limit_is_refused_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _cell(tmp_path, monkeypatch, CELL_HTTP_MAX_CONNECTIONS="5") as cell:
        held = [await _open(cell.port) for _ in range(5)]
        await asyncio.sleep(0.2)  # the cell has accepted them
        burst = [await _open(cell.port) for _ in range(3)]
        for reader, writer in burst:  # refused at once, without reading a request
            async with asyncio.timeout(MARGIN_S):
                assert (await reader.read(4096)).startswith(b"HTTP/1.1 503 ")
            writer.close()
        async with httpx.AsyncClient(base_url=cell.url, timeout=5.0) as http:
            refused = await http.get("/healthz")
            assert refused.status_code == 503
            assert "too many connections" in refused.text
            for _, writer in held:
                writer.close()
            await asyncio.sleep(0.3)
            assert (await http.get("/healthz")).status_code == 200
    said = [x for x in cell.log.read_text().splitlines() if "CELL_HTTP_MAX_CONNECTIONS" in x]
    assert 1 <= len(said) < 4, said  # four refusals, logged once a second at most


async def test_a_request_head_over_32_kib_is_refused_431(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _cell(tmp_path, monkeypatch) as cell:
        reader, writer = await _open(cell.port)
        writer.write(
            b"GET /healthz HTTP/1.1\r\nhost: cell\r\nx-big: " + b"a" * 40_000 + b"\r\n\r\n"
        )
        async with asyncio.timeout(MARGIN_S):
            answer = await reader.read(4096)
        assert answer.startswith(b"HTTP/1.1 431 "), answer
        writer.close()
