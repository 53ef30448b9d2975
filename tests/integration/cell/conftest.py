"""A real cell process shared by the cell integration tests (unique call ids per test)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from agentcall.cell.client import CellClient
from tests.support.services import S3Settings

from .harness import CellProcess


@pytest.fixture(scope="package")
def cell_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CellProcess]:
    process = CellProcess(tmp_path_factory.mktemp("cell") / "data")
    process.start()
    yield process
    assert process.stop() == 0, process.log.read_text()[-2000:]


@pytest.fixture
def fresh_cell(tmp_path: Path) -> Iterator[CellProcess]:
    """A cell of its own, for tests that kill or restart it."""
    process = CellProcess(tmp_path / "data")
    process.start()
    yield process
    process.stop()


@pytest.fixture
async def cell(cell_process: CellProcess) -> AsyncIterator[CellClient]:
    async with CellClient(cell_process.url) as client:
        yield client


@pytest.fixture
def s3_client(s3: S3Settings) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=s3.endpoint,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
        region_name=s3.region,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )


@pytest.fixture
def object_key(s3_client: Any, s3: S3Settings) -> Iterator[str]:
    key = f"cell-tests/{uuid.uuid4().hex}.wav"
    yield key
    s3_client.delete_object(Bucket=s3.bucket, Key=key)
