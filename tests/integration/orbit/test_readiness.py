"""`/readyz` follows the database without a restart: 503 with the reason while MariaDB cannot
be reached (the server's link to it goes through a TCP proxy the test cuts; the shared MariaDB
itself is never stopped), 200 again once the link is back; `/healthz` stays 200 throughout."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.integration.orbit.databases import fresh_url
from tests.integration.orbit.workers_harness import TcpProxy, execution_server

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]


class _ProxyThread:
    """The TCP proxy on its own event loop: the server's start-up (a blocking wait here)
    needs the database through it."""

    def __init__(self, target_port: int) -> None:
        self.proxy = TcpProxy(target_port)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def run(self, work: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(work, self.loop).result(10)

    def close(self) -> None:
        self.run(self.proxy.cut())
        self.loop.call_soon_threadsafe(self.loop.stop)


def _ready_until(http: httpx.Client, status: int, timeout: float = 20) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        response = http.get("/readyz", timeout=10)
        if response.status_code == status or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def test_readyz_is_503_while_the_database_is_unreachable_and_200_after(
    tmp_path: Path,
) -> None:
    with fresh_url("mariadb", tmp_path, migrated=True) as direct:
        target = make_url(direct)
        link = _ProxyThread(target.port or 3306)
        link.run(link.proxy.start())
        via_proxy = target.set(host="127.0.0.1", port=link.proxy.port)
        url = via_proxy.render_as_string(hide_password=False)
        try:
            with execution_server(url, tmp_path / "serve.log") as base:
                with httpx.Client(base_url=base) as http:
                    assert _ready_until(http, 200).json() == {"status": "ready"}
                    link.run(link.proxy.cut())
                    down = _ready_until(http, 503)
                    assert down.status_code == 503, down.text
                    assert down.json()["status"] == "unavailable" and down.json()["reason"]
                    print(f"/readyz while cut: 503 {down.json()}")
                    assert http.get("/healthz").status_code == 200
                    link.run(link.proxy.start())  # the link is back; no restart of the server
                    up = _ready_until(http, 200)
                    assert up.status_code == 200, up.text
        finally:
            link.close()
