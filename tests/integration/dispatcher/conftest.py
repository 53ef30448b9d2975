"""Fixtures of the Dispatcher's integration tests (real SQLite files, RabbitMQ, S3)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.support.services import s3_settings


@pytest.fixture(scope="module")
def s3() -> Any:
    """A boto3 client of the local S3 (overrides the settings fixture of tests/conftest.py
    here); skips the test when the store is not running."""
    cfg = s3_settings()
    client = boto3.client(
        "s3",
        endpoint_url=cfg.endpoint,
        aws_access_key_id=cfg.access_key,
        aws_secret_access_key=cfg.secret_key,
        region_name=cfg.region,
    )
    try:
        client.head_bucket(Bucket=cfg.bucket)
    except Exception as exc:  # noqa: BLE001 - any failure means: no local S3
        pytest.skip(f"S3 is not reachable ({exc}): run scripts/services start")
    return client
