"""O-LST-1 cursors, O-API-1 credentials, O-SUB-1 idempotency keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.cursor import Position, decode_cursor, encode_cursor
from agentcall.orbit.domain.errors import (
    IdempotencyConflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from agentcall.orbit.domain.idempotency import StoredReceipt, check_key, check_replay
from agentcall.orbit.domain.ids import check_id, new_id, task_id_from_path
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.tokens import (
    ALL_PERMISSIONS,
    Permission,
    TokenRecord,
    authenticate,
    bearer_secret,
    generate_secret,
    hash_secret,
    parse_permission,
)

pytestmark = pytest.mark.unit

Q1, Q2, T = "a" * 32, "b" * 32, "c" * 32
NOW = datetime(2026, 9, 17, 1, 2, 3, 456789, tzinfo=UTC)


@pytest.mark.parametrize("state", [None, TaskState.WAITING, TaskState.CANCELLED])
def test_o_lst_1_cursor_roundtrip(state: TaskState | None) -> None:
    position = Position(Q1, state, NOW, T)
    cursor = encode_cursor(position)
    assert len(cursor) <= 1024 and cursor.isascii()
    assert decode_cursor(cursor, Q1, state) == position


@pytest.mark.parametrize(
    ("queue", "state"), [(Q2, None), (Q1, TaskState.WAITING), (Q2, TaskState.CANCELLED)]
)
def test_o_lst_1_cursor_bound_to_queue_and_state(queue: str, state: TaskState | None) -> None:
    """O-LST-1: a cursor is only valid for the queue/state it was issued for."""
    cursor = encode_cursor(Position(Q1, TaskState.CANCELLED if queue == Q1 else None, NOW, T))
    with pytest.raises(InvalidArgument, match="different queue_id or state"):
        decode_cursor(cursor, queue, state)


def _flip(cursor: str) -> str:
    return cursor[:10] + ("A" if cursor[10] != "A" else "B") + cursor[11:]


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "x" * 1025,
        "not a cursor!",
        "YWJj",
        "===",
        "c1",
        encode_cursor(Position(Q1, None, NOW, T))[:-3],
    ],
)
def test_o_lst_1_cursor_garbage(cursor: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        decode_cursor(cursor, Q1, None)
    assert caught.value.field == "cursor"


def test_o_lst_1_cursor_tampering_detected() -> None:
    cursor = encode_cursor(Position(Q1, None, NOW, T))
    with pytest.raises(InvalidArgument):
        decode_cursor(_flip(cursor), Q1, None)


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("a", True),
        ("k" * 128, True),
        ("!~{}", True),
        ("", False),
        ("k" * 129, False),
        ("has space", False),
        ("tab\t", False),
        ("é", False),
        (None, False),
    ],
)
def test_o_sub_1_idempotency_key(key: str | None, ok: bool) -> None:
    """O-SUB-1: 1-128 printable ASCII characters without spaces."""
    if ok:
        assert check_key(key) == key
    else:
        with pytest.raises(InvalidArgument):
            check_key(key)


def test_o_sub_1_replay_or_conflict() -> None:
    stored = StoredReceipt(Digest("orbit-json-v1", "a"), 201, "{}")
    assert check_replay(stored, Digest("orbit-json-v1", "a")) is stored
    with pytest.raises(IdempotencyConflict):
        check_replay(stored, Digest("orbit-json-v1", "b"))
    with pytest.raises(IdempotencyConflict):
        check_replay(stored, Digest("orbit-json-v2", "a"))


def test_o_api_3_ids() -> None:
    identifier = new_id()
    assert check_id(identifier, "id") == identifier and len(identifier) == 32
    for bad in ("A" * 32, "a" * 33, 5, None):
        with pytest.raises(InvalidArgument):
            check_id(bad, "id")
    with pytest.raises(NotFound):
        task_id_from_path("zz")


def record(**changes: object) -> TokenRecord:
    values: dict[str, object] = {
        "token_id": T,
        "namespace_id": "n" * 32,
        "permissions": frozenset({Permission.READ}),
        "queue_ids": frozenset({Q1}),
        "expires_at": None,
        "revoked_at": None,
    }
    values.update(changes)
    return TokenRecord(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "token",
    [None, record(revoked_at=NOW), record(expires_at=NOW), record(expires_at=NOW - timedelta(1))],
)
def test_o_api_1_unauthenticated(token: TokenRecord | None) -> None:
    """O-API-1: unknown, expired (at the instant) and revoked tokens are 401."""
    with pytest.raises(Unauthenticated, match="unknown, expired or revoked"):
        authenticate(token, NOW)


def test_o_api_1_principal_checks() -> None:
    principal = authenticate(record(expires_at=NOW + timedelta(seconds=1)), NOW)
    principal.require(Permission.READ)
    principal.require_queue(Q1)
    principal.require_visible("n" * 32, Q1)
    with pytest.raises(PermissionDenied):
        principal.require(Permission.SUBMIT)
    with pytest.raises(PermissionDenied):
        principal.require_queue(Q2)
    with pytest.raises(NotFound):
        principal.require_visible("m" * 32, Q1)
    with pytest.raises(NotFound):
        principal.require_visible("n" * 32, Q2)


@pytest.mark.parametrize(
    ("header", "secret"),
    [("Bearer orb_x", "orb_x"), ("bearer orb_x", "orb_x"), ("BEARER  orb_x ", "orb_x")],
)
def test_o_api_1_bearer_header(header: str, secret: str) -> None:
    assert bearer_secret(header) == secret


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer ", "Basic abc", "orb_x"])
def test_o_api_1_bearer_header_rejected(header: str | None) -> None:
    with pytest.raises(Unauthenticated):
        bearer_secret(header)


def test_secrets_are_random_and_hashed() -> None:
    first, second = generate_secret(), generate_secret()
    assert first != second and first.startswith("orb_") and len(first) == 47
    assert hash_secret(first) != hash_secret(second) and len(hash_secret(first)) == 64
    assert {parse_permission(p.value) for p in Permission} == ALL_PERMISSIONS
    with pytest.raises(InvalidArgument):
        parse_permission("tasks:everything")
