"""Shared fixtures, one meaning per name everywhere; service locations live in
`tests.support.services`.

- `amqp_url_fixture`: the local RabbitMQ's URL.
- `s3_settings`: where the local S3 listens and its bucket (`S3Settings`).
- `s3_client`: a boto3 client of the local S3; skips the test when the store is not running.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.support.services import S3Settings, amqp_url, s3_settings


@pytest.fixture(scope="session")
def amqp_url_fixture() -> str:
    return amqp_url()


@pytest.fixture(scope="session", name="s3_settings")
def s3_settings_fixture() -> S3Settings:
    return s3_settings()


@pytest.fixture(scope="session")
def s3_client() -> Any:
    settings = s3_settings()
    client = boto3.client(
        "s3",
        endpoint_url=settings.endpoint,
        aws_access_key_id=settings.access_key,
        aws_secret_access_key=settings.secret_key,
        region_name=settings.region,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    try:
        client.head_bucket(Bucket=settings.bucket)
    except Exception as exc:  # noqa: BLE001 - any failure means: no local S3
        pytest.skip(f"S3 is not reachable ({exc}): run scripts/services start")
    return client


_TIERS = ("unit", "integration", "acceptance")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tier from its folder, so `-m unit` never misses one."""
    for item in items:
        parts = item.path.parts
        for tier in _TIERS:
            if tier in parts:
                item.add_marker(getattr(pytest.mark, tier))
