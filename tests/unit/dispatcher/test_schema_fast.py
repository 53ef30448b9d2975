"""The compiled call.execute check says "valid" exactly when jsonschema does (D-MQ-5).

It only short-cuts acceptance; an invalid body is still reported by jsonschema, so a
schema violation is dead-lettered with the same detail as before.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from agentcall.dispatcher import contracts
from agentcall.dispatcher.contracts.fast import compile_check
from agentcall.dispatcher.contracts.schemas import _fast_checks, _validator

KIND = contracts.Kind.CALL_EXECUTE
FORMATS = Draft202012Validator.FORMAT_CHECKER
BASE: dict[str, Any] = {
    "schema_version": "command-next.v0.1-proposal",
    "dispatcher_id": "c046b893-8628-4589-ae50-619d049248a6",
    "tenant_id": "tenant-1",
    "tenant_key": "key-1",
    "trace_id": "trace-1",
    "issued_at": "2026-09-21T10:00:00Z",
    "command_id": "cmd-1",
    "command_type": "call.execute",
    "not_after": "2026-09-21T11:00:00.123+02:00",
    "payload": {"task_id": "task-1", "callee": "+4930123456"},
}


def jsonschema_valid(body: object) -> bool:
    return _validator(KIND).is_valid(body)


def fast_valid(body: object) -> bool:
    check = _fast_checks(contracts.contracts_dir()).get(KIND)
    assert check is not None, "call.execute must compile to the fast check"
    return check(body)


def mutated(path: tuple[str, ...], value: object) -> dict[str, Any]:
    body = copy.deepcopy(BASE)
    target = body
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


DELETE = object()
CASES = [
    ("valid", ("trace_id",), "trace-1"),
    ("missing required", ("command_id",), DELETE),
    ("missing payload key", ("payload", "callee"), DELETE),
    ("extra top-level key", ("extra",), "x"),
    ("extra payload key", ("payload", "extra"), "x"),
    ("const differs", ("command_type",), "task.control"),
    ("const wrong type", ("schema_version",), 1),
    ("dispatcher_id uppercase", ("dispatcher_id",), "C046B893-8628-4589-AE50-619D049248A6"),
    ("dispatcher_id not v4", ("dispatcher_id",), "c046b893-8628-1589-ae50-619d049248a6"),
    ("opaque_id empty", ("tenant_id",), ""),
    ("opaque_id control char", ("tenant_key",), "a\u0007b"),
    ("opaque_id DEL", ("trace_id",), "a\u007f"),
    ("opaque_id 256", ("command_id",), "x" * 256),
    ("opaque_id 257", ("command_id",), "x" * 257),
    ("opaque_id unicode", ("command_id",), "événement-☎"),
    ("opaque_id number", ("command_id",), 17),
    ("task_id dot", ("payload", "task_id"), "a.b"),
    ("task_id 128", ("payload", "task_id"), "t" * 128),
    ("task_id 129", ("payload", "task_id"), "t" * 129),
    ("task_id trailing newline", ("payload", "task_id"), "task\n"),
    ("callee letters", ("payload", "callee"), "+49abc"),
    ("callee 32 digits", ("payload", "callee"), "1" * 32),
    ("callee 33 digits", ("payload", "callee"), "1" * 33),
    ("callee null", ("payload", "callee"), None),
    ("date without offset", ("issued_at",), "2026-09-21T10:00:00"),
    ("date invalid day", ("issued_at",), "2026-02-30T10:00:00Z"),
    ("date invalid hour", ("not_after",), "2026-09-21T25:00:00Z"),
    ("date nanoseconds", ("not_after",), "2026-09-21T10:00:00.123456789Z"),
    ("date lowercase t", ("issued_at",), "2026-09-21t10:00:00Z"),
    ("payload not an object", ("payload",), ["task-1", "+49"]),
    ("payload empty", ("payload",), {}),
]


@pytest.mark.parametrize(("name", "path", "value"), CASES, ids=[c[0] for c in CASES])
def test_fast_check_agrees_with_jsonschema_d_mq_5(
    name: str, path: tuple[str, ...], value: Any
) -> None:
    body = mutated(path, value)
    assert fast_valid(body) == jsonschema_valid(body)


def test_fast_check_agrees_on_random_bodies_d_mq_5() -> None:
    rng = random.Random(20261201)
    alphabet = ["a", "Z", "0", "9", "-", "_", ".", "+", " ", "\n", "\u0000", "\u001f", "é", "☎"]
    fields = [("tenant_id",), ("command_id",), ("payload", "task_id"), ("payload", "callee")]
    agreed = {True: 0, False: 0}
    for _ in range(3000):
        path = rng.choice(fields)
        text = "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 12, 40])))
        body = mutated(path, text)
        expected = jsonschema_valid(body)
        assert fast_valid(body) == expected, (path, text)
        agreed[expected] += 1
    assert min(agreed.values()) > 100, agreed  # both answers were exercised


def test_not_an_object_d_mq_5() -> None:
    bodies: list[object] = [None, [], "text", 3, True]
    for body in bodies:
        assert fast_valid(body) is jsonschema_valid(body) is False


def test_invalid_body_reported_by_jsonschema_d_mq_5() -> None:
    """The error of a refused body is jsonschema's (path, keyword), not the shortcut's."""
    with pytest.raises(contracts.ContractError) as caught:
        contracts.validate(KIND, mutated(("payload", "task_id"), "a.b"))
    assert (caught.value.path, caught.value.keyword) == ("$.payload.task_id", "pattern")


UNSUPPORTED = [
    {"type": "integer"},
    {"type": ["string", "null"]},
    {"enum": ["a"]},
    {"anyOf": [{"type": "string"}]},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"n": {"minimum": 1}}},
    {"const": 1},
    {"$ref": "common.schema.json#/$defs/task_id"},
]


@pytest.mark.parametrize("schema", UNSUPPORTED, ids=[str(s) for s in UNSUPPORTED])
def test_schemas_outside_the_subset_are_not_compiled(schema: dict[str, Any]) -> None:
    assert compile_check(schema, FORMATS) is None


def test_only_compiling_kinds_take_the_shortcut() -> None:
    compiled = _fast_checks(contracts.contracts_dir())
    assert KIND in compiled
    assert contracts.Kind.TASK_CONFIG not in compiled  # uses anyOf, if/then, arrays…
