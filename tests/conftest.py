"""Shared fixtures; service locations live in `tests.services`."""

from __future__ import annotations

import pytest

from tests.services import S3Settings, amqp_url, s3_settings


@pytest.fixture(scope="session")
def amqp_url_fixture() -> str:
    return amqp_url()


@pytest.fixture(scope="session")
def s3() -> S3Settings:
    return s3_settings()
