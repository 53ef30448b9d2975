"""Fixtures of the Mock SaaS integration tests: one real server per session, one
dispatcher (unique UUID, cleaned up) per test, a real aio-pika connection."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aio_pika
import pytest
from aio_pika.abc import AbstractRobustConnection

from tests.integration.mocksaas.harness import Dispatcher, Server
from tests.support.services import amqp_url

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("mocksaas")
    srv = Server(base / "state.db", base / "server.log").start()
    yield srv
    assert srv.stop() == 0, srv.log.read_text()[-3000:]


@pytest.fixture
def dispatcher(server: Server) -> Iterator[Dispatcher]:
    d = server.new_dispatcher()
    yield d
    d.delete()


@pytest.fixture
async def amqp() -> AsyncIterator[AbstractRobustConnection]:
    conn = await aio_pika.connect_robust(amqp_url())
    yield conn
    await conn.close()
