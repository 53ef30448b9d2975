"""Recording grants are renewed only on the cell's request, also across a SIGKILL of the D
(D-NOTE-7, D-REC-1), through real processes: mocksaas, RabbitMQ, ``dispatcher run``, a sim
cell and SeaweedFS.

Grants live 2 s (``DISPATCHER_UPLOAD_AUTHORIZATION_S``) and the cell tolerates no clock
skew (``--upload-expiry-skew-s 0``), so a grant handed over late is dead at the cell within
seconds instead of a minute. The D reaches the cell through a relay that drops upload
requests on demand (the cell away for uploads; events and the other requests pass), which
holds the grant between its issue and the cell's PUT.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.acceptance.dispatcher.harness import Cell, MockSaas, Scenario, s3_env
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq, pytest.mark.s3]

GRANT_S = 2
SCRIPT = {
    "version": 1,
    "time_scale": 0.02,
    "rules": [],
    "default": {
        "outcome": "answered",
        "ring_ms": 200,
        "turns": ["Hello?", "Yes."],
        "recording": True,
    },
}


@pytest.fixture
def sim_cell(tmp_path: Path, saas: MockSaas) -> Iterator[Cell]:
    process = Cell(tmp_path, SCRIPT, ["--upload-expiry-skew-s", "0"]).start()
    yield process
    process.proc.stop()


@pytest.fixture
def relay(sim_cell: Cell) -> Iterator[TcpProxy]:
    proxy = TcpProxy.for_url(sim_cell.url).start()
    yield proxy
    proxy.close()


def is_upload(chunk: bytes) -> bool:
    line = chunk.split(b"\r\n", 1)[0]
    return line.startswith(b"POST ") and b"/recording/upload " in line


def loop_counts(s: Scenario) -> dict[str, Any]:
    """What this D process did to recordings (``loop_*``) and their stored states."""
    return dict(s.status()["recordings"])


def cell_uploads(cell: Cell) -> dict[str, float]:
    text = httpx.get(f"{cell.url}/metrics", timeout=5).text
    return {
        line.split('"')[1]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("cell_uploads_total{")
    }


def test_a_grant_is_renewed_only_on_request_also_after_a_sigkill_d_note_7(
    saas: MockSaas, sim_cell: Cell, relay: TcpProxy, workdir: Path, s3_client: Any
) -> None:
    s = Scenario(saas, sim_cell, workdir)
    s.sip()
    s.task("task-renew", ring_timeout_ms=5000)
    s.quota()
    env = s3_env(
        f"it-renew-{uuid.uuid4().hex[:8]}",
        deadline_s="60",
        DISPATCHER_UPLOAD_AUTHORIZATION_S=str(GRANT_S),
        DISPATCHER_CELL_URL=relay.url(sim_cell.url),
    )
    relay.refuse = is_upload  # the grant cannot reach the cell
    try:
        s.start(wait_open=False, **env)
        s.calls("task-renew", callees=["15000000001"])
        wait_for(lambda: loop_counts(s).get("loop_authorized") == 1, 20, "the grant issued")
        time.sleep(GRANT_S + 1.5)  # the grant is dead now; the D still holds it
        counts = loop_counts(s)
        assert counts["authorized"] == 1 and "loop_renewed_on_request" not in counts, counts
        assert cell_uploads(sim_cell) == {}, "no upload request reached the cell"

        s.kill()  # mid-upload: the grant issued, the cell's answer never came
        relay.refuse = None
        # The restarted D hands the held (dead) grant over; the cell asks for a renewal.
        s.start(wait_open=False, **env)
        (result,) = s.wait_results(1, timeout=20, event_type="call.result")
        after = loop_counts(s)
        assert after.get("loop_renewed_on_request") == 1 and "loop_authorized" not in after
        time.sleep(1.0)
        assert len(s.results(event_type="call.result")) == 1, "D-RES-1: one call.result"
    finally:
        if s.proc is not None and s.proc.alive:
            s.stop()

    payload = result["body"]["payload"]
    rec = payload["recording"]
    assert result["valid"] and (payload["outcome"], rec["status"]) == ("answered", "uploaded")
    body = s3_client.get_object(Bucket=rec["bucket"], Key=rec["object_key"])["Body"].read()
    assert hashlib.sha256(body).hexdigest() == rec["checksum_sha256"]
    # One PUT: the dead grant was refused by the cell itself, the renewal uploaded.
    assert cell_uploads(sim_cell) == {"expired": 1.0, "uploaded": 1.0}
    with sqlite3.connect(s.env()["DISPATCHER_STATE_DB"]) as db:
        (authorizations,) = db.execute("SELECT authorizations FROM recordings").fetchone()
    assert authorizations == 2  # the first grant and the one renewal the cell asked for
