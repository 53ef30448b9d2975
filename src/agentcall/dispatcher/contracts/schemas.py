"""Validate SaaS <-> Dispatcher message bodies against the JSON Schemas.

The schemas live in ``contracts/dispatcher/`` at the repository root, one file
``<kind>.schema.json`` per message kind plus ``common.schema.json`` (shared
``$defs``, not a kind). The package reaches them as ``agentcall/contracts/dispatcher``: in
a checkout a link to that folder, in an installed wheel a copy of its ``*.json`` files
(package data). They are loaded, checked against Draft 2020-12 and
compiled ONCE (lazily, on first use, cached per directory), with a
``referencing`` registry resolving ``$ref`` between files and the format checker
enabled (``date-time`` via rfc3339-validator, ``date``).

Locating the files:

1. ``DISPATCHER_CONTRACTS_DIR`` if set (a test, or schemas other than the installed ones);
2. otherwise ``agentcall/contracts/dispatcher`` beside this package (checkout or wheel).

If neither holds the files, :class:`ContractSetupError` says so on first use.

A kind whose schema fits :mod:`agentcall.dispatcher.contracts.fast` (``call.execute``) is accepted
by that compiled check when it says valid; otherwise jsonschema decides and reports.

Beyond the schemas, :func:`validate` checks what JSON Schema cannot express:
cursors are at most 2**64-1 (D-DISC-1). :func:`decode` adds the body size limit
(D-ID-3) and strict JSON parsing (no duplicate keys, no NaN/Infinity).

Errors never echo instance values (they may carry phone numbers); they name the
JSON path, the failing keyword and the schema-side expectation.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from agentcall.dispatcher.contracts.fast import Check, compile_check
from agentcall.dispatcher.errors import DispatcherError

__all__ = [
    "ENV_DIR",
    "MAX_BODY_BYTES",
    "UINT64_MAX",
    "ContractError",
    "ContractSetupError",
    "Kind",
    "command_kind",
    "contracts_dir",
    "control_reject_reasons",
    "decode",
    "execute_reject_reasons",
    "kinds",
    "schema",
    "validate",
]

ENV_DIR: Final = "DISPATCHER_CONTRACTS_DIR"
SCHEMA_SUFFIX: Final = ".schema.json"
COMMON_FILE: Final = "common.schema.json"
MAX_BODY_BYTES: Final = 8_388_608
UINT64_MAX: Final = 2**64 - 1
_NAMES_ONLY: Final = frozenset({"required", "additionalProperties"})
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")  # maybe a lone surrogate


class Kind(StrEnum):
    """Every message kind; the value is the schema file name without ``.schema.json``."""

    SIP_CONFIG = "config-read.sip_config"
    TASK_CONFIG = "config-read.task_config"
    TENANT_QUOTA = "config-read.tenant_quota"
    CONFIG_ERROR = "config-read.error"
    DISCOVERY_PAGE = "task-discovery.page"
    DISCOVERY_ERROR = "task-discovery.error"
    CALL_EXECUTE = "command-next.call_execute"
    TASK_CONTROL = "command-next.task_control"
    EXECUTE_RESULT = "command-next.execute_result"
    CONTROL_RESULT = "command-next.control_result"
    CALL_RESULT = "call-result.call_result"


_CURSOR_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {Kind.DISCOVERY_PAGE: ("next_cursor",)}
_COMMAND_KINDS: Final[Mapping[str, Kind]] = {
    "call.execute": Kind.CALL_EXECUTE,
    "task.control": Kind.TASK_CONTROL,
}


class ContractError(DispatcherError):
    """A message body does not match its contract.

    Fix: the sender must emit a body valid against
    ``contracts/dispatcher/<kind>.schema.json``; the receiver rejects it (MQ:
    record a redacted fact and ``nack(requeue=false)``, D-MQ-5; HTTP: fail closed).
    """

    def __init__(self, kind: str, path: str, keyword: str, detail: str) -> None:
        self.kind = kind
        self.path = path
        self.keyword = keyword
        self.detail = detail
        super().__init__(f"{kind}: {path} fails '{keyword}': {detail}")


class ContractSetupError(DispatcherError):
    """The contract schemas cannot be used (missing, invalid) or the kind is unknown.

    Fix: reinstall the package (it carries the schemas), or set DISPATCHER_CONTRACTS_DIR
    to a copy of ``contracts/dispatcher``; ask only for kinds listed by :func:`kinds`.
    """


def contracts_dir() -> Path:
    """Directory holding the schema files (see the module docstring)."""
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override)
    return _package_dir()


@cache
def _package_dir() -> Path:
    """``agentcall/contracts/dispatcher``; resolved once: it is looked up for every message
    validated."""
    return Path(__file__).resolve().parents[2] / "contracts" / "dispatcher"


def kinds() -> tuple[str, ...]:
    """Names of every message kind found in the contracts directory, sorted."""
    return tuple(sorted(_compiled(contracts_dir())))


def schema(kind: str) -> Mapping[str, Any]:
    """The raw schema of ``kind`` (read-only use)."""
    body = _validator(kind).schema
    assert isinstance(body, Mapping)
    return body


def validate(kind: str, body: object) -> None:
    """Raise :class:`ContractError` unless ``body`` satisfies the contract ``kind``."""
    fast = _fast_checks(contracts_dir()).get(kind)
    if fast is not None and fast(body):
        _check_cursors(kind, body)
        return
    error = best_match(_validator(kind).iter_errors(body))
    if error is not None:
        raise ContractError(kind, error.json_path, str(error.validator), _detail(error))
    _check_cursors(kind, body)


def decode(kind: str, raw: bytes) -> object:
    """Parse a UTF-8 JSON body strictly and validate it as ``kind`` (D-ID-3, D-MQ-5).

    Every body that is not strict JSON raises :class:`ContractError` (keyword ``json``),
    whatever it holds: invalid UTF-8, NaN/Infinity or a number beyond a float, duplicate
    keys, an integer of more than 4,300 digits, a lone UTF-16 surrogate (it could not be
    stored or logged as UTF-8), nesting deeper than the interpreter can follow. Nothing
    else escapes: a body can never stop the loop that decodes it.
    """
    if len(raw) > MAX_BODY_BYTES:
        raise ContractError(kind, "$", "maxBytes", f"body is {len(raw)} bytes > {MAX_BODY_BYTES}")
    try:
        text = raw.decode("utf-8")
        body = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
        if _SURROGATE_ESCAPE.search(text):
            json.dumps(body, ensure_ascii=False).encode("utf-8")  # a lone one cannot encode
    except RecursionError as exc:
        raise ContractError(kind, "$", "json", "nested too deeply") from exc
    except (UnicodeError, ValueError) as exc:
        detail = f"not strict UTF-8 JSON ({type(exc).__name__})"
        raise ContractError(kind, "$", "json", detail) from exc
    try:
        validate(kind, body)
    except RecursionError as exc:
        raise ContractError(kind, "$", "depth", "nested too deeply to validate") from exc
    return body


def command_kind(body: object) -> Kind:
    """Kind of an incoming MQ command body, chosen by its ``command_type``."""
    command_type = body.get("command_type") if isinstance(body, dict) else None
    kind = _COMMAND_KINDS.get(command_type) if isinstance(command_type, str) else None
    if kind is None:
        expected = f"expected one of {sorted(_COMMAND_KINDS)}"
        raise ContractError("command-next", "$.command_type", "enum", expected)
    return kind


def execute_reject_reasons() -> frozenset[str]:
    """Reason codes of a rejected call.execute, from ``common.schema.json`` (D-CMD-3)."""
    return _common_enum("execute_reject_reason")


def control_reject_reasons() -> frozenset[str]:
    """Reason codes of a rejected task.control, from ``common.schema.json`` (D-CTL-5)."""
    return _common_enum("control_reject_reason")


def _validator(kind: str) -> Draft202012Validator:
    compiled = _compiled(contracts_dir())
    try:
        return compiled[kind]
    except KeyError:
        known = sorted(compiled)
        raise ContractSetupError(f"unknown contract kind {kind!r}; known: {known}") from None


def _common_enum(name: str) -> frozenset[str]:
    common = _read(contracts_dir() / COMMON_FILE)
    return frozenset(common["$defs"][name]["enum"])


@cache
def _compiled(directory: Path) -> dict[str, Draft202012Validator]:
    files = sorted(directory.glob(f"*{SCHEMA_SUFFIX}"))
    if not files:
        raise ContractSetupError(f"no *{SCHEMA_SUFFIX} files in {directory}; set {ENV_DIR}")
    checker = Draft202012Validator.FORMAT_CHECKER
    if "date-time" not in checker.checkers:
        raise ContractSetupError(
            "date-time format checking unavailable; install jsonschema[format-nongpl]"
        )
    schemas = {path.name: _read(path) for path in files}
    registry: Registry[Any] = Registry().with_resources(
        (body["$id"], Resource.from_contents(body, default_specification=DRAFT202012))
        for body in schemas.values()
    )
    return {
        name.removesuffix(SCHEMA_SUFFIX): Draft202012Validator(
            _bundled(body, schemas), registry=registry, format_checker=checker
        )
        for name, body in schemas.items()
        if name != COMMON_FILE
    }


@cache
def _fast_checks(directory: Path) -> dict[str, Check]:
    """The kinds whose bundled schema compiles to a fast check (see the module docstring)."""
    checker = Draft202012Validator.FORMAT_CHECKER
    found = {}
    for kind, validator in _compiled(directory).items():
        check = compile_check(validator.schema, checker)
        if check is not None:
            found[kind] = check
    return found


def _bundled(body: dict[str, Any], schemas: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """``body`` with every ``{"$ref": …}`` replaced by its target (performance only).

    Resolving ``$ref`` through the registry costs more than the rest of the validation
    (URL joins per reference, per message); the contracts only use plain references to
    ``common.schema.json`` or the same file, without siblings and without recursion, so
    substituting them validates exactly the same. Anything else is left as a ``$ref``.
    """
    bundled: dict[str, Any] = _inline(body, body, schemas, ())
    return bundled


def _inline(
    node: Any, here: dict[str, Any], schemas: Mapping[str, dict[str, Any]], seen: tuple[str, ...]
) -> Any:
    if isinstance(node, list):
        return [_inline(item, here, schemas, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) == 1:
        file, _, pointer = ref.partition("#")
        doc = schemas.get(file) if file else here
        key = f"{file}#{pointer}"
        if doc is not None and key not in seen and "~" not in pointer:
            target: Any = doc
            try:
                for part in filter(None, pointer.split("/")):
                    target = target[part]
            except (KeyError, TypeError):
                return dict(node)  # a dangling reference: let jsonschema report it
            return _inline(target, doc, schemas, (*seen, key))
    return {k: _inline(v, here, schemas, seen) for k, v in node.items()}


def _read(path: Path) -> dict[str, Any]:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(body)
    except (OSError, ValueError, SchemaError) as exc:
        raise ContractSetupError(f"cannot use schema {path}: {exc}") from exc
    if not isinstance(body, dict) or "$id" not in body:
        raise ContractSetupError(f"schema {path} has no $id")
    return body


def _detail(error: ValidationError) -> str:
    if error.validator in _NAMES_ONLY:
        return error.message
    expected = json.dumps(error.validator_value, ensure_ascii=False)
    return f"expected {expected[:120]}"


def _check_cursors(kind: str, body: object) -> None:
    for field in _CURSOR_FIELDS.get(kind, ()):
        value = body.get(field) if isinstance(body, dict) else None
        if isinstance(value, str) and int(value) > UINT64_MAX:
            raise ContractError(kind, f"$.{field}", "uint64", f"expected <= {UINT64_MAX}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    body = dict(pairs)
    if len(body) != len(pairs):
        raise ValueError("duplicate key")
    return body


def _no_constant(name: str) -> object:
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("number beyond a double")
    return value
