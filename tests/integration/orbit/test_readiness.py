"""`/readyz` follows the database without a restart: 503 with the reason while MariaDB cannot
be reached (the server's link to it goes through a TCP proxy the test cuts; the shared MariaDB
itself is never stopped), 200 again once the link is back; `/healthz` stays 200 throughout."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.support.orbit_databases import fresh_url
from tests.support.orbit_server import execution_server
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]


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
        link = TcpProxy("127.0.0.1", target.port or 3306).start()
        via_proxy = target.set(host="127.0.0.1", port=link.port)
        url = via_proxy.render_as_string(hide_password=False)
        try:
            with execution_server(url, tmp_path / "serve.log") as base:
                with httpx.Client(base_url=base) as http:
                    assert _ready_until(http, 200).json() == {"status": "ready"}
                    link.cut()
                    down = _ready_until(http, 503)
                    assert down.status_code == 503, down.text
                    assert down.json()["status"] == "unavailable" and down.json()["reason"]
                    print(f"/readyz while cut: 503 {down.json()}")
                    assert http.get("/healthz").status_code == 200
                    link.restore()  # the link is back; no restart of the server
                    up = _ready_until(http, 200)
                    assert up.status_code == 200, up.text
        finally:
            link.close()
