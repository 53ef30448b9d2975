"""Shared fixtures; service locations live in `tests.support.services`."""

from __future__ import annotations

import pytest

from tests.support.services import S3Settings, amqp_url, s3_settings


@pytest.fixture(scope="session")
def amqp_url_fixture() -> str:
    return amqp_url()


@pytest.fixture(scope="session")
def s3() -> S3Settings:
    return s3_settings()


_TIERS = ("unit", "integration", "acceptance")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tier from its folder, so `-m unit` never misses one."""
    for item in items:
        parts = item.path.parts
        for tier in _TIERS:
            if tier in parts:
                item.add_marker(getattr(pytest.mark, tier))
