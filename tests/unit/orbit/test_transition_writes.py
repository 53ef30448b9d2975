"""The engine's writes: one batched writer per transition kind
(`agentcall.orbit.store.transactions`), built from the pure row builders of
`agentcall.orbit.domain.transitions`, and one lease-token check,
`agentcall.orbit.domain.lease_tokens.token_is_current`, which every check of a presented token
uses."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentcall.orbit.domain.attempts import (
    AttemptState,
    EndReason,
    Outcome,
    TaskErrorCode,
    TaskFacts,
)
from agentcall.orbit.domain.errors import IllegalTransition
from agentcall.orbit.domain.evidence import WorkerError
from agentcall.orbit.domain.lease_tokens import token_digest, token_is_current
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy
from agentcall.orbit.domain.transitions import (
    ERROR_MESSAGES,
    EndFacts,
    EndWrite,
    LiveAttempt,
    StartWrite,
    end_task_row,
)
from agentcall.orbit.store.sql import Increment, Insert, Update
from agentcall.orbit.store.transactions import end_writes, start_writes
from tests.unit import layers

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
FACTS = TaskFacts(RecoverySafety.IDEMPOTENT, RetryPolicy(3, 0, 0, 60_000), 1, NOW, None)


def live(n: int, state: AttemptState, task_state: TaskState) -> LiveAttempt:
    return LiveAttempt(
        f"a{n}",
        f"t{n}",
        "ns",
        "q",
        1,
        state,
        token_digest(f"tok{n}"),
        "c1",
        NOW,
        NOW,
        None,
        None,
        None,
        0,
        task_state,
        3,
        False,
        FACTS,
    )


SUCCEEDED = Outcome(TaskState.SUCCEEDED, AttemptState.SUCCEEDED, EndReason.RESULT)
REQUEUED = Outcome(
    TaskState.WAITING, AttemptState.EXPIRED, EndReason.LEASE_EXPIRED, available_at=NOW
)
RUNNING, LEASED = (AttemptState.RUNNING, TaskState.RUNNING), (AttemptState.LEASED, TaskState.LEASED)


def shape(writes: list[Update | Insert]) -> list[tuple[str, str, int, str]]:
    return [
        (
            type(w).__name__,
            w.table.name,
            len(w.rows),
            str(dict(w.where)) if isinstance(w, Update) else "",
        )
        for w in writes
    ]


@pytest.mark.parametrize(
    ("ends", "expected"),
    [
        (  # a batch of results: one UPDATE each table, one INSERT (the hot path's shape)
            [(1, RUNNING, SUCCEEDED), (2, RUNNING, SUCCEEDED), (3, RUNNING, REQUEUED)],
            [
                ("Update", "task_attempts", 3, "{'state': 'RUNNING'}"),
                ("Update", "tasks", 3, "{'state': 'RUNNING'}"),
                ("Insert", "task_events", 3, ""),
            ],
        ),
        (  # a sweep over leased and running attempts: one UPDATE per state read
            [(1, LEASED, REQUEUED), (2, RUNNING, REQUEUED), (3, LEASED, REQUEUED)],
            [
                ("Update", "task_attempts", 2, "{'state': 'LEASED'}"),
                ("Update", "task_attempts", 1, "{'state': 'RUNNING'}"),
                ("Update", "tasks", 2, "{'state': 'LEASED'}"),
                ("Update", "tasks", 1, "{'state': 'RUNNING'}"),
                ("Insert", "task_events", 3, ""),
            ],
        ),
    ],
)
def test_one_end_writer_groups_by_the_states_read(
    ends: list[tuple[int, tuple[AttemptState, TaskState], Outcome]],
    expected: list[tuple[str, str, int, str]],
) -> None:
    items = [EndWrite(live(n, *states), outcome) for n, states, outcome in ends]
    writes = end_writes(NOW, items)
    assert shape(writes) == expected
    assert all(w.static.get("revision") is not None for w in writes if w.table.name == "tasks")
    assert isinstance(writes[-1], Insert)
    assert [row["revision"] for row in writes[-1].rows] == [4, 4, 4]  # revision read + 1


def test_an_end_the_state_machine_forbids_writes_nothing() -> None:
    ended = live(1, AttemptState.RUNNING, TaskState.SUCCEEDED)
    with pytest.raises(IllegalTransition):
        end_writes(NOW, [EndWrite(ended, SUCCEEDED)])


def test_starts_are_one_update_each_table_and_one_insert() -> None:
    later = NOW + timedelta(seconds=15)
    starts = [StartWrite(live(n, *LEASED), later) for n in (1, 2)]
    writes = start_writes(NOW, starts)
    assert shape(writes) == [
        ("Update", "task_attempts", 2, "{'state': 'LEASED'}"),
        ("Update", "tasks", 2, "{'state': 'LEASED'}"),
        ("Insert", "task_events", 2, ""),
    ]
    tasks_update = writes[1]
    assert isinstance(tasks_update, Update)
    assert isinstance(tasks_update.static["attempt_count"], Increment)


@pytest.mark.parametrize(
    ("outcome", "error", "message"),
    [
        (
            Outcome(
                TaskState.FAILED,
                AttemptState.FAILED,
                EndReason.RESULT,
                TaskErrorCode.HANDLER_FAILED,
            ),
            WorkerError("E", "the worker's words", False),
            "the worker's words",
        ),
        (
            Outcome(
                TaskState.FAILED,
                AttemptState.FAILED,
                EndReason.RESULT,
                TaskErrorCode.HANDLER_FAILED,
            ),
            WorkerError("E", "", False),
            ERROR_MESSAGES[TaskErrorCode.HANDLER_FAILED],
        ),
        (
            Outcome(
                TaskState.FAILED,
                AttemptState.EXPIRED,
                EndReason.LEASE_EXPIRED,
                TaskErrorCode.ATTEMPTS_EXHAUSTED,
            ),
            None,
            ERROR_MESSAGES[TaskErrorCode.ATTEMPTS_EXHAUSTED],
        ),
    ],
)
def test_the_task_error_message(outcome: Outcome, error: WorkerError | None, message: str) -> None:
    end = EndWrite(live(1, *RUNNING), outcome, EndFacts(error=error))
    assert end_task_row(end, NOW)["error_message"] == message


@pytest.mark.parametrize(
    ("presented", "current"),
    [("tok1", True), ("tok2", False), ("", False), ("tök1", False), ("tok1 ", False)],
)
def test_token_is_current(presented: str, current: bool) -> None:
    assert token_is_current(presented, token_digest("tok1")) is current


def token_checks(sources: dict[str, Path]) -> list[str]:
    """Comparisons that involve a stored lease-token digest (`…token_sha256`): every such
    check belongs in `token_is_current`."""
    found = []
    for module, tree in layers.trees(sources):
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                if any(name.endswith("token_sha256") for name in names):
                    found.append(f"{module}:{node.lineno}")
    return found


def test_the_lease_token_is_checked_in_one_function() -> None:
    sources = layers.modules("agentcall.orbit")
    del sources["agentcall.orbit.domain.lease_tokens"]
    assert token_checks(sources) == []


def test_the_token_check_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "ok = token_is_current(ref.lease_token, live.token_sha256)\n"
        "bad = live.token_sha256 != sha256(ref.lease_token)\n"
        "also = row.lease_token_sha256 == digest\n",
        encoding="utf-8",
    )
    assert token_checks({"m": module}) == ["m:2", "m:3"]
