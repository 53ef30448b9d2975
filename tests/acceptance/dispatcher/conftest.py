"""Whole processes driven from outside: one mocksaas and one sim cell per session, one D
identity (and its ``dispatcher run`` process) per test."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.acceptance.dispatcher.harness import Cell, MockSaas, Scenario
from tests.support.cell_scripts import busy_talk_script
from tests.support.services import amqp_url

# Callees ending in 9 are busy, in 8 answer and talk briefly, everyone else does not answer.
SCRIPT = busy_talk_script(["Hello?", "Not interested."], no_answer_ring_ms=1000)


def _broker_up() -> bool:
    parts = urlsplit(amqp_url())
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5672), 2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dispatcher-it")


@pytest.fixture(scope="session")
def saas(workdir: Path) -> Iterator[MockSaas]:
    if not _broker_up():
        pytest.skip("RabbitMQ is not reachable: run scripts/services start")
    server = MockSaas(workdir).start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def sim_cell(workdir: Path) -> Iterator[Cell]:
    process = Cell(workdir, SCRIPT).start()
    yield process
    process.proc.stop()


@pytest.fixture
def scenario(saas: MockSaas, sim_cell: Cell, workdir: Path) -> Iterator[Scenario]:
    s = Scenario(saas, sim_cell, workdir)
    yield s
    if s.proc is not None and s.proc.alive:
        s.stop()


@pytest.fixture
def own_cell(request: pytest.FixtureRequest, tmp_path: Path, saas: MockSaas) -> Iterator[Cell]:
    """A cell of this test alone, running the test module's own `SCRIPT` (for tests that kill
    or restart the cell)."""
    process = Cell(tmp_path, request.module.SCRIPT).start()
    yield process
    if process.proc.alive:
        process.proc.stop()


@pytest.fixture
def scene(saas: MockSaas, own_cell: Cell, workdir: Path) -> Iterator[Scenario]:
    """`scenario` on `own_cell`."""
    s = Scenario(saas, own_cell, workdir)
    yield s
    if s.proc is not None and s.proc.alive:
        s.stop()
