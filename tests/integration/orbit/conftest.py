"""Fixtures of the Orbit integration suites (both databases)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.orbit.databases import KINDS, fresh_url


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
