"""Validator over the JSON Schemas in ``contracts/dispatcher/`` (Draft 2020-12).

The Mock SaaS does not import the Dispatcher: it loads the same schema files itself.
A schema ``<kind>.schema.json`` is addressed by its kind, e.g. ``config-read.sip_config``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing._core import Resolver  # the public type of Registry.resolver()
from referencing.jsonschema import DRAFT202012

from agentcall.mocksaas.errors import ContractFileError

ENV_DIR = "MOCKSAAS_CONTRACTS_DIR"
SUFFIX = ".schema.json"
UINT64_MAX = 2**64 - 1


def find_contracts_dir(start: Path | None = None) -> Path:
    """``$MOCKSAAS_CONTRACTS_DIR``, else the nearest ``contracts/dispatcher`` above
    this file or the working directory."""
    if env := os.environ.get(ENV_DIR):
        return Path(env)
    for base in (start or Path(__file__).resolve(), Path.cwd()):
        for parent in (base, *base.parents):
            candidate = parent / "contracts" / "dispatcher"
            if (candidate / "common.schema.json").is_file():
                return candidate
    raise ContractFileError(f"contracts/dispatcher not found; set {ENV_DIR}")


@dataclass(frozen=True)
class Violation:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class Contracts:
    """All schemas of one contracts directory, with format checking on."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        files = sorted(directory.glob(f"*{SUFFIX}"))
        if not files:
            raise ContractFileError(f"no *{SUFFIX} in {directory}")
        self._schemas: dict[str, dict[str, Any]] = {}
        resources: list[tuple[str, Resource[Any]]] = []
        for path in files:
            try:
                schema = json.loads(path.read_text("utf-8"))
            except (OSError, ValueError) as exc:
                raise ContractFileError(f"{path}: {exc}") from exc
            self._schemas[path.name[: -len(SUFFIX)]] = schema
            resource = Resource.from_contents(schema, default_specification=DRAFT202012)
            resources.append((schema.get("$id", path.name), resource))
        self._registry: Registry[Any] = Registry().with_resources(resources)
        self._validators: dict[str, Draft202012Validator] = {}

    @property
    def kinds(self) -> Iterable[str]:
        return self._schemas.keys()

    def _validator(self, kind: str) -> Draft202012Validator:
        if kind not in self._validators:
            if kind not in self._schemas:
                raise ContractFileError(f"no schema for kind {kind!r} in {self.directory}")
            schema = self._schemas[kind]
            resolver = self._registry.resolver(base_uri=schema.get("$id", ""))
            self._validators[kind] = Draft202012Validator(
                inline_refs(schema, resolver, ()),
                registry=self._registry,
                format_checker=Draft202012Validator.FORMAT_CHECKER,
            )
        return self._validators[kind]

    def violations(self, kind: str, body: Any) -> list[Violation]:
        """Every schema violation of ``body`` as ``kind`` (empty list: valid)."""
        found = [
            Violation(error.json_path, error.message)
            for error in self._validator(kind).iter_errors(body)
        ]
        found.extend(_extra_checks(kind, body))
        return found

    def is_valid(self, kind: str, body: Any) -> bool:
        return not self.violations(kind, body)


def inline_refs(node: Any, resolver: Resolver[Any], stack: tuple[int, ...]) -> Any:
    """``node`` with every ``$ref`` replaced by its target (same meaning, no lookups at
    validation time: ~3x faster). A recursive reference is left as it is."""
    if isinstance(node, list):
        return [inline_refs(item, resolver, stack) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: inline_refs(v, resolver, stack) for k, v in node.items() if k != "$ref"}
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return out
    resolved = resolver.lookup(ref)
    key = id(resolved.contents)
    if key in stack:
        out["$ref"] = ref
        return out
    target = inline_refs(resolved.contents, resolved.resolver, (*stack, key))
    if not out:
        return target
    out.setdefault("allOf", []).append(target)
    return out


def _extra_checks(kind: str, body: Any) -> list[Violation]:
    """Rules JSON Schema cannot express (uint64 range of the cursor)."""
    if kind == "task-discovery.page" and isinstance(body, dict):
        cursor = body.get("next_cursor")
        if isinstance(cursor, str) and cursor.isdigit() and int(cursor) > UINT64_MAX:
            return [Violation("$.next_cursor", "exceeds uint64")]
    return []


_DEFAULT: Contracts | None = None


def default_contracts() -> Contracts:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Contracts(find_contracts_dir())
    return _DEFAULT
