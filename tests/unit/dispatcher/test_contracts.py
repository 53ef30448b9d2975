"""Contract schemas: examples, schema hygiene and the agentcall.dispatcher.contracts module.

Rule IDs covered: D-ID-1, D-ID-3, D-CFG-1..4, D-DISC-1, D-DISC-2, D-DISC-9,
D-CMD-1, D-CMD-3, D-CTL-1, D-RES-1, D-RES-2, D-REC-2 (topology rules live in
test_contracts_topology.py).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from agentcall.dispatcher import contracts
from agentcall.dispatcher.contracts import ContractError, ContractSetupError, Kind
from agentcall.dispatcher.errors import DispatcherError

ROOT = contracts.contracts_dir()
VALID = ROOT / "examples" / "valid"
INVALID = ROOT / "examples" / "invalid"
EXPECTED: dict[str, dict[str, str]] = json.loads((INVALID / "EXPECTED.json").read_text())
SCHEMA_FILES = sorted(ROOT.glob("*.schema.json"))
DID = "c046b893-8628-4589-ae50-619d049248a6"

RULES = {
    "config-read.sip_config": "D-CFG-1",
    "config-read.task_config": "D-CFG-2",
    "config-read.tenant_quota": "D-CFG-3",
    "config-read.error": "D-CFG-4",
    "task-discovery.page": "D-DISC-2",
    "task-discovery.error": "D-DISC-9",
    "command-next.call_execute": "D-CMD-1",
    "command-next.task_control": "D-CTL-1",
    "command-next.execute_result": "D-CMD-3",
    "command-next.control_result": "D-CTL-1",
    "call-result.call_result": "D-RES-1",
}


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _valid(kind: str, name: str) -> Any:
    return _load(VALID / kind / name)


def _example_id(path: Path) -> str:
    return f"{RULES[path.parent.name]}:{path.parent.name}/{path.name}"


VALID_FILES = sorted(VALID.glob("*/*.json"))


@pytest.mark.parametrize("path", VALID_FILES, ids=_example_id)
def test_every_valid_example_passes(path: Path) -> None:
    contracts.validate(path.parent.name, _load(path))


@pytest.mark.parametrize(
    "rel", sorted(EXPECTED), ids=lambda rel: f"{RULES[rel.split('/')[0]]}:{rel}"
)
def test_every_invalid_example_fails_for_its_stated_reason(rel: str) -> None:
    kind = rel.split("/")[0]
    with pytest.raises(ContractError) as caught:
        contracts.validate(kind, _load(INVALID / rel))
    assert (caught.value.path, caught.value.keyword) == (
        EXPECTED[rel]["path"],
        EXPECTED[rel]["keyword"],
    )
    assert caught.value.kind == kind
    assert caught.value.path in str(caught.value)


def test_invalid_examples_are_all_indexed_and_cover_three_categories_per_kind() -> None:
    on_disk = {p.relative_to(INVALID).as_posix() for p in INVALID.glob("*/*.json")}
    assert on_disk == set(EXPECTED)
    for kind in contracts.kinds():
        categories = {e["category"] for rel, e in EXPECTED.items() if rel.startswith(f"{kind}/")}
        assert categories == {"missing", "extra", "value"}, kind


def test_every_kind_has_valid_examples_and_a_kind_enum_member() -> None:
    assert set(contracts.kinds()) == {k.value for k in Kind} == set(RULES)
    assert {p.parent.name for p in VALID_FILES} == set(RULES)


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.name)
def test_schema_files_are_draft_2020_12(path: Path) -> None:
    body = _load(path)
    Draft202012Validator.check_schema(body)
    assert body["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert body["$id"].endswith("/" + path.name)


def _walk(node: Any, in_conditional: bool = False) -> Iterator[tuple[dict[str, Any], bool]]:
    if isinstance(node, dict):
        yield node, in_conditional
        for key, child in node.items():
            if key in ("properties", "$defs"):
                for sub in child.values():
                    yield from _walk(sub, in_conditional=False)
            elif key not in ("enum", "const"):
                yield from _walk(child, in_conditional or key in ("if", "then", "else"))
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, in_conditional)


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.name)
def test_every_object_schema_forbids_additional_properties(path: Path) -> None:
    """Objects are closed; maps (additionalProperties = schema) constrain their keys."""
    seen = 0
    for node, in_conditional in _walk(_load(path)):
        if node.get("type") == "object":
            seen += 1
            extra = node.get("additionalProperties")
            assert extra is False or (isinstance(extra, dict) and "propertyNames" in node), node
        elif "properties" in node:
            assert in_conditional, f"open 'properties' outside if/then/else: {node}"
    assert seen > 0 or path.name == "common.schema.json"


def test_contract_errors_are_dispatcher_errors_and_never_echo_values() -> None:
    body = _valid("command-next.call_execute", "spec-v0.2-3.1-call-execute.json")
    body["payload"]["callee"] = "secret-13800138000x"
    with pytest.raises(DispatcherError) as caught:
        contracts.validate(Kind.CALL_EXECUTE, body)
    assert isinstance(caught.value, ContractError)
    assert "secret-13800138000x" not in str(caught.value)
    assert "$.payload.callee" in str(caught.value) and "pattern" in str(caught.value)


def test_unknown_kind_is_a_setup_error() -> None:
    with pytest.raises(ContractSetupError, match="unknown contract kind"):
        contracts.validate("command-next.call.execute", {})


def test_env_override_points_at_another_copy_and_fails_closed_when_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_dir = tmp_path / "copy"
    shutil.copytree(ROOT, copy_dir, ignore=shutil.ignore_patterns("examples"))
    monkeypatch.setenv(contracts.ENV_DIR, str(copy_dir))
    assert contracts.contracts_dir() == copy_dir
    assert contracts.kinds() == tuple(sorted(RULES))
    monkeypatch.setenv(contracts.ENV_DIR, str(tmp_path / "empty"))
    with pytest.raises(ContractSetupError, match=contracts.ENV_DIR):
        contracts.kinds()


def test_broken_schema_file_is_a_setup_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "x.schema.json").write_text('{"$id": "urn:x", "type": 5}')
    monkeypatch.setenv(contracts.ENV_DIR, str(tmp_path))
    with pytest.raises(ContractSetupError, match="x.schema.json"):
        contracts.kinds()


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "a": 2}',
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b"\xff\xfe{}",
        b"{",
        b"",
    ],
)
def test_d_mq_5_decode_rejects_malformed_json_as_contract_error(raw: bytes) -> None:
    with pytest.raises(ContractError) as caught:
        contracts.decode(Kind.CALL_EXECUTE, raw)
    assert (caught.value.path, caught.value.keyword) == ("$", "json")


def test_decode_returns_the_validated_body() -> None:
    path = VALID / "command-next.task_control" / "spec-v0.2-3.4-stop.json"
    assert contracts.decode(Kind.TASK_CONTROL, path.read_bytes()) == _load(path)


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"command_type": "call.execute"}, Kind.CALL_EXECUTE),
        ({"command_type": "task.control"}, Kind.TASK_CONTROL),
        ({"command_type": "command.result"}, None),
        ({"command_type": 1}, None),
        ({}, None),
        ([], None),
    ],
)
def test_d_cmd_1_d_ctl_1_command_kind_by_command_type(body: object, kind: Kind | None) -> None:
    if kind is not None:
        assert contracts.command_kind(body) is kind
        return
    with pytest.raises(ContractError) as caught:
        contracts.command_kind(body)
    assert (caught.value.path, caught.value.keyword) == ("$.command_type", "enum")
