"""``POST …/calls`` tells the truth while the broker is unreachable, and a retry never dials
anyone twice: commands stored but not yet published answer 202 with each one ``pending``;
the same ``Idempotency-Key`` answers the same command ids and publishes nothing new; the
relay publishes each stored command exactly once when the broker is back.

The broker is cut with a TCP proxy between this Mock SaaS and the shared RabbitMQ (which
keeps running for everyone else).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from aio_pika.abc import AbstractRobustConnection
from click.testing import CliRunner

from agentcall.mocksaas.cli import main
from tests.integration.mocksaas.amqp_helpers import drain, message_count
from tests.integration.mocksaas.harness import Server
from tests.support.services import amqp_url
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    relay = TcpProxy.for_url(amqp_url()).start()
    yield relay
    relay.close()


@pytest.fixture
def cut_server(tmp_path: Path, proxy: TcpProxy) -> Iterator[Server]:
    srv = Server(tmp_path / "state.db", tmp_path / "server.log", amqp=proxy.url(amqp_url()))
    srv.start()
    yield srv
    srv.stop()


def post_calls(srv: Server, path: str, body: dict[str, object], key: str | None) -> httpx.Response:
    headers = {"Idempotency-Key": key} if key else {}
    return srv.http.post(f"/admin/v1{path}/calls", json=body, headers=headers)


async def published(amqp: AbstractRobustConnection, queue: str, count: int) -> list[str]:
    """Wait until ``count`` messages are in ``queue``, then take them: their command ids."""
    for _ in range(300):
        if (await message_count(amqp, queue) or 0) >= count:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.5)  # a duplicate publish would land by now (relay: every second)
    return [json.loads(m.body)["command_id"] for m in await drain(amqp, queue)]


async def test_calls_while_the_broker_is_down_are_pending_and_published_once(
    cut_server: Server, proxy: TcpProxy, amqp: AbstractRobustConnection
) -> None:
    srv = cut_server
    d = srv.new_dispatcher()
    task = d.put_task()["task_id"]
    path = f"{d.path}/tasks/{task}"
    queue = f"agent-call.d.{d.id}.task.{task}.v3"
    proxy.cut()
    started = time.monotonic()
    first = post_calls(srv, path, {"count": 3}, "key-1")
    assert first.status_code == 202, first.text  # stored, not yet published: not a failure
    assert time.monotonic() - started < 15
    out = first.json()
    assert (out["confirmed"], out["pending"], out["replayed"]) == (0, 3, False)
    assert [c["state"] for c in out["commands"]] == ["pending"] * 3
    retry = post_calls(srv, path, {"count": 3}, "key-1")
    assert retry.status_code == 202 and retry.json()["command_ids"] == out["command_ids"]
    assert retry.json()["replayed"] is True
    other = post_calls(srv, path, {"count": 2}, "key-1")
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_key_reused"
    keyless = post_calls(srv, path, {"callees": ["15000000042"]}, None)
    assert keyless.status_code == 202 and keyless.json()["pending"] == 1

    proxy.restore()
    ids = await published(amqp, queue, 4)
    assert sorted(ids) == sorted([*out["command_ids"], *keyless.json()["command_ids"]])
    again = post_calls(srv, path, {"count": 3}, "key-1")
    assert again.status_code == 200, again.text
    assert again.json()["command_ids"] == out["command_ids"]
    assert again.json()["confirmed"] == 3
    assert await message_count(amqp, queue) == 0, "a replay publishes nothing"
    d.delete()


async def test_admin_call_cli_sends_a_key_and_shows_each_state(
    cut_server: Server, amqp: AbstractRobustConnection
) -> None:
    srv = cut_server
    d = srv.new_dispatcher()
    task = d.put_task()["task_id"]
    argv = ["admin", "--url", srv.url, "call", d.id, task, "--count", "2"]
    runner = CliRunner()
    first = runner.invoke(main, [*argv, "--idempotency-key", "cli-key"])
    assert first.exit_code == 0, first.output
    out = json.loads(first.output)
    assert [c["state"] for c in out["commands"]] == ["confirmed", "confirmed"]
    again = json.loads(runner.invoke(main, [*argv, "--idempotency-key", "cli-key"]).output)
    assert again["command_ids"] == out["command_ids"] and again["replayed"] is True
    fresh = json.loads(runner.invoke(main, argv).output)  # a new key each time by default
    assert set(fresh["command_ids"]).isdisjoint(out["command_ids"])
    queue = f"agent-call.d.{d.id}.task.{task}.v3"
    assert await message_count(amqp, queue) == 4
    d.delete()
