"""A real cell process shared by the cell integration tests (unique call ids per test)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

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
def object_key(s3_client: Any, s3_settings: S3Settings) -> Iterator[str]:
    key = f"cell-tests/{uuid.uuid4().hex}.wav"
    yield key
    s3_client.delete_object(Bucket=s3_settings.bucket, Key=key)
