"""The Mock SaaS validator (refs inlined for speed) agrees with every contract example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcall.mocksaas.contracts import Contracts, find_contracts_dir

EXAMPLES = find_contracts_dir() / "examples"


def _all(kind_dir: str) -> list[Path]:
    return sorted((EXAMPLES / kind_dir).glob("*/*.json"))


@pytest.mark.parametrize("path", _all("valid"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_valid_examples_pass(contracts: Contracts, path: Path) -> None:
    assert contracts.violations(path.parent.name, json.loads(path.read_text())) == []


@pytest.mark.parametrize("path", _all("invalid"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_invalid_examples_fail_at_the_expected_path(contracts: Contracts, path: Path) -> None:
    expected = json.loads((EXAMPLES / "invalid" / "EXPECTED.json").read_text())
    found = contracts.violations(path.parent.name, json.loads(path.read_text()))
    assert found
    want = expected.get(f"{path.parent.name}/{path.name}", {}).get("path")
    if want:
        assert any(v.path.startswith(want) for v in found), (want, found)


def test_cursor_above_uint64_is_a_violation(contracts: Contracts) -> None:
    page = {
        "schema_version": "task-discovery.v0.3-proposal",
        "dispatcher_id": "c046b893-8628-4589-ae50-619d049248a6",
        "tasks": [],
        "next_cursor": str(2**64),
    }
    assert [v.path for v in contracts.violations("task-discovery.page", page)] == ["$.next_cursor"]
