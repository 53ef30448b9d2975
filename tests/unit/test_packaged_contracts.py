"""The contract schemas are package data: the Dispatcher and the mock SaaS find them inside the
`agentcall` package (a link to the repository's contracts/dispatcher in a checkout, a copy in a
wheel), so an installed wheel validates messages without any setting; the repository's
contracts/dispatcher stays the one source."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentcall.dispatcher
from agentcall.dispatcher.contracts import schemas
from agentcall.mocksaas.contracts import find_contracts_dir

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = Path(agentcall.dispatcher.__file__).resolve().parents[1] / "contracts" / "dispatcher"


def test_the_dispatcher_reads_the_schemas_of_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(schemas.ENV_DIR, raising=False)
    assert schemas.contracts_dir() == PACKAGED
    assert (PACKAGED / "command-next.call_execute.schema.json").is_file()
    assert "command-next.call_execute" in schemas.kinds()


def test_the_mock_saas_reads_the_same_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOCKSAAS_CONTRACTS_DIR", raising=False)
    monkeypatch.chdir("/")
    assert find_contracts_dir() == PACKAGED


def test_the_package_links_to_the_one_source() -> None:
    assert PACKAGED.is_symlink()
    assert PACKAGED.resolve() == (ROOT / "contracts" / "dispatcher").resolve()
