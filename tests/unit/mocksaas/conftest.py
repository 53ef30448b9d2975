"""Shared pure fixtures of the Mock SaaS unit tests."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from agentcall.mocksaas.topology import Topology

D = "c046b893-8628-4589-ae50-619d049248a6"
NOW = datetime(2026, 9, 21, 8, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def contracts() -> Contracts:
    return Contracts(find_contracts_dir())


@pytest.fixture(scope="session")
def topology() -> Topology:
    return Topology.load(find_contracts_dir())
