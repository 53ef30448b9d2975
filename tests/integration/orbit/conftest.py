"""Fixtures of the Orbit integration suites (both databases, real server over HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agentcall.orbit.store.db import Database
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant, running_server


@pytest.fixture(scope="session", params=KINDS)
def db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated database shared by the session; tests isolate by their own namespace."""
    with fresh_url(request.param, tmp_path_factory.mktemp("orbit"), migrated=True) as url:
        yield url


@pytest.fixture(params=KINDS)
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A brand-new database with no schema at all."""
    with fresh_url(request.param, tmp_path, migrated=False) as url:
        yield url


@pytest.fixture(scope="session")
def server_url(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`orbit serve` on a loopback port, over the session database."""
    log = tmp_path_factory.mktemp("orbit-server") / "server.log"
    with running_server(db_url, log, "--no-access-log") as url:
        yield url


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = Database.open(db_url, pool_size=4)
    yield database
    await database.close()


@pytest.fixture
async def tenant(db: Database, server_url: str) -> Tenant:
    return await Tenant.create(db, server_url)


@pytest.fixture
async def http(server_url: str) -> AsyncIterator[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=server_url, timeout=30, limits=limits) as client:
        yield client
