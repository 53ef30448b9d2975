"""State lives in SQLite: a restarted Mock SaaS serves the same pages, re-declares its
topology, republishes what was never confirmed and keeps consuming results."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aio_pika.abc import AbstractRobustConnection

from tests.integration.mocksaas.amqp_helpers import message_count, publish_result
from tests.integration.mocksaas.harness import Server, stop_applied
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]


async def test_state_survives_restart(tmp_path: Path, amqp: AbstractRobustConnection) -> None:
    srv = Server(tmp_path / "state.db", tmp_path / "server.log", page_size=2).start()
    try:
        d = srv.new_dispatcher()
        ids = [d.put_task(f"rs-{i}-{d.id[:8]}")["task_id"] for i in range(3)]
        d.set_status(ids[0], "paused")
        d.set_status(ids[1], "stopped")
        queue = f"agent-call.d.{d.id}.task.{ids[2]}.v3"
        channel = await amqp.channel()
        await channel.queue_delete(queue)  # make the next publish unroutable
        pending = d.admin("POST", f"/tasks/{ids[2]}/calls", {"count": 2}, expect=202)
        assert pending["pending"] == 2
        pages = [d.page(c).json() for c in ("0", "2", "4", "5")]
        assert srv.stop() == 0

        srv.start()  # same SQLite file, new process
        assert [d.page(c).json() for c in ("0", "2", "4", "5")] == pages
        for _ in range(100):  # task queue re-declared, relay republishes the same bodies
            if await message_count(amqp, queue) == 2:
                break
            await asyncio.sleep(0.1)
        assert await message_count(amqp, queue) == 2
        await publish_result(amqp, d.id, stop_applied(d, ids[1]))  # consumer resumed
        wait_for(
            lambda: d.admin("GET", f"/tasks/{ids[1]}")["status"] == "removed",
            what="retirement after restart",
        )
        assert d.page("5").json()["tasks"][0]["status"] == "removed"
        d.delete()
        await channel.close()
    finally:
        if srv.proc is not None and srv.proc.poll() is None:
            assert srv.stop() == 0
