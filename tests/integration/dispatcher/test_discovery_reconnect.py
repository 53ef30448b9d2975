"""The discovery loop reaches a SaaS (a real HTTP server on loopback) through the shared TCP
proxy: while the SaaS refuses connections every failed round closes the gate and waits the
D's reconnect policy's delay for the failed rounds in a row (growing, capped at
``error_backoff_s``); the first round that catches up lifts the gate and resets the count
(D-DISC-9: the cursor is kept throughout)."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentcall.dispatcher.discovery.gate import Gate
from agentcall.dispatcher.discovery.service import DiscoveryLoop
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.saas.client import SaasClient
from agentcall.dispatcher.settings import Secret
from agentcall.dispatcher.store.db import Database
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration
D_ID = "c046b893-8628-4589-ae50-619d049248a6"
PAGES = Path(__file__).resolve().parents[3] / "contracts/dispatcher/examples/valid"
CAUGHT_UP = (PAGES / "task-discovery.page" / "v0.3-caught-up-at-start.json").read_bytes()
NOW = datetime(2026, 9, 21, tzinfo=UTC)


class CaughtUp(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server hook
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(CAUGHT_UP)))
        self.end_headers()
        self.wfile.write(CAUGHT_UP)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def saas() -> Iterator[TcpProxy]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CaughtUp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with TcpProxy("127.0.0.1", server.server_address[1]) as proxy:
        yield proxy
    server.shutdown()
    server.server_close()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "state.sqlite")
    yield database
    await database.close()


async def nothing(stored: dict[str, LocalTask], tasks: object) -> None:
    return None


async def test_refused_rounds_back_off_by_the_policy_and_one_success_resets_d_disc_9(
    saas: TcpProxy, db: Database
) -> None:
    assert json.loads(CAUGHT_UP)["dispatcher_id"] == D_ID
    client = SaasClient(f"http://127.0.0.1:{saas.port}", D_ID, Secret("s"), 2.0)
    gate = Gate()
    loop = DiscoveryLoop(
        client,
        db,
        gate,
        interval_s=30.0,
        error_backoff_s=4.0,
        clock=lambda: NOW,
        on_tasks=nothing,  # type: ignore[arg-type]
        jitter=lambda: 1.0,  # the top of each delay's range: the ceiling itself
    )
    try:
        assert await loop.round() == 30.0, "the SaaS answers: caught up, the poll interval"
        saas.cut()  # the SaaS refuses every connection
        delays = [await loop.round() for _ in range(6)]
        assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
        assert loop.failures == 6 and "discovery" in gate.reasons
        saas.restore()
        assert await loop.round() == 30.0
        assert loop.failures == 0 and "discovery" not in gate.reasons
        saas.cut()
        assert await loop.round() == 0.5, "counted from one again after the success"
    finally:
        await client.aclose()
