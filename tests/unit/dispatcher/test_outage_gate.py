"""The outage gate and its retry schedule, pure (D-NOTE-2, D-NOTE-1)."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.domain.outage import (
    SIP,
    STALE,
    Read,
    ReadKey,
    backoff,
    blocking,
    transient,
)

TASK_A = ReadKey(Read.TASK, "task-a")
QUOTA_T1 = ReadKey(Read.QUOTA, "tenant-1")


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (None, "timeout", True),
        (None, "transport_error", True),
        (500, "invalid_error_body", True),
        (502, "invalid_error_body", True),
        (503, "service_unavailable", True),
        (503, "tenant_quota_unavailable", True),
        (200, STALE, True),  # a lagging replica (D-NOTE-1)
        (401, "unauthorized", False),
        (403, "dispatcher_not_authorized", False),
        (404, "resource_not_found", False),
        (200, "schema_violation", False),
        (200, "identity_or_consistency", False),
        (200, "agent_version_content_changed", False),
    ],
)
def test_only_transient_failures_are_outages_d_note_2(
    status: int | None, code: str, expected: bool
) -> None:
    assert transient(status, code) is expected


@pytest.mark.parametrize(
    ("outages", "task_id", "tenant_id", "held_by"),
    [
        (frozenset(), "task-a", "tenant-1", None),
        (frozenset({SIP}), "task-a", "tenant-1", SIP),  # SIP holds every task
        (frozenset({SIP}), "task-z", "tenant-9", SIP),
        (frozenset({TASK_A}), "task-a", "tenant-1", TASK_A),
        (frozenset({TASK_A}), "task-b", "tenant-1", None),  # another task is not held
        (frozenset({QUOTA_T1}), "task-b", "tenant-1", QUOTA_T1),  # every task of the tenant
        (frozenset({QUOTA_T1}), "task-b", "tenant-2", None),
        (frozenset({QUOTA_T1, TASK_A, SIP}), "task-a", "tenant-1", SIP),  # SIP named first
        (frozenset({QUOTA_T1, TASK_A}), "task-a", "tenant-1", TASK_A),
    ],
)
def test_an_outage_holds_exactly_what_depends_on_the_read_d_note_2(
    outages: frozenset[ReadKey], task_id: str, tenant_id: str, held_by: ReadKey | None
) -> None:
    assert blocking(outages, task_id, tenant_id) == held_by


@pytest.mark.parametrize(
    ("attempt", "jitter", "expected"),
    [
        (1, 0.0, 0.25),  # half of base 0.5 …
        (1, 0.999999, 0.5),  # … up to all of it
        (2, 0.0, 0.5),
        (3, 0.5, 1.5),  # ceiling 2.0: between 1.0 and 2.0
        (6, 0.0, 5.0),  # 0.5 * 32 = 16 → capped at 10
        (6, 1.0, 10.0),
        (500, 0.0, 5.0),  # huge attempts stay capped, no overflow
    ],
)
def test_backoff_is_exponential_capped_and_jittered_d_note_2(
    attempt: int, jitter: float, expected: float
) -> None:
    assert backoff(attempt, 0.5, 10.0, jitter) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(("attempt", "base", "cap"), [(0, 0.5, 10), (1, 0, 10), (1, 0.5, 0)])
def test_backoff_refuses_nonsense(attempt: int, base: float, cap: float) -> None:
    with pytest.raises(ValueError):
        backoff(attempt, base, cap, 0.5)


def test_read_keys_name_the_read() -> None:
    assert (str(SIP), str(TASK_A), str(QUOTA_T1)) == ("sip", "task:task-a", "quota:tenant-1")
