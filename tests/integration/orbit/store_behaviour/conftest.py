"""The one behaviour suite over every store: `backend` is SQLite, MariaDB or the in-memory
twin. The SQL databases are migrated once per session; each test works in a namespace and
queue of its own (`Backend.tenant`), the twin is new for every test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agentcall.orbit.store.db import Database
from tests.integration.orbit.store_behaviour.backends import SETTINGS, Backend
from tests.integration.orbit.store_behaviour.memory_backend import MemoryBackend
from tests.integration.orbit.store_behaviour.sql_backend import SqlBackend
from tests.support.orbit_databases import fresh_url

BACKENDS = ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb), "memory"]


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fresh_url("sqlite", tmp_path_factory.mktemp("behaviour"), migrated=True) as url:
        yield url


@pytest.fixture(scope="session")
def mariadb_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fresh_url("mariadb", tmp_path_factory.mktemp("behaviour"), migrated=True) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def store_kind(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """The backend's name and, for a SQL one, its session database's URL."""
    if request.param == "memory":
        return "memory", None
    return request.param, request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
async def backend(store_kind: tuple[str, str | None]) -> AsyncIterator[Backend]:
    kind, url = store_kind
    made: Backend
    if url is None:
        made = MemoryBackend(SETTINGS)
    else:
        made = SqlBackend(kind, Database.open(url, pool_size=2), SETTINGS)
    yield made
    await made.close()
