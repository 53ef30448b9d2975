"""What a started server process does to its own runtime: what startup made leaves the
garbage collector's generations (`gc.freeze`), and the young generation is collected every
10,000 new objects instead of CPython's 700 (the collector's share of a busy server's CPU)."""

from __future__ import annotations

import gc
from pathlib import Path

from starlette.testclient import TestClient

from agentcall.orbit.assembly.server import YOUNG_GC_THRESHOLD, create_app
from agentcall.orbit.store.db import Database
from tests.support.orbit_databases import fresh_url


def test_a_started_server_freezes_startup_and_raises_the_young_gc_threshold(
    tmp_path: Path,
) -> None:
    before = gc.get_threshold()
    # from CPython's defaults, whatever an app started earlier in this process left
    gc.set_threshold(700, *before[1:])
    gc.unfreeze()
    try:
        with (
            fresh_url("sqlite", tmp_path, migrated=True) as url,
            TestClient(create_app(Database.open(url))) as client,
        ):
            assert client.get("/healthz").status_code == 200
            assert gc.get_threshold() == (YOUNG_GC_THRESHOLD, *before[1:])
            assert gc.get_freeze_count() > 0
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
