"""Admission as one pure function (D-CMD-2, D-CMD-3, D-CFG-1..3, D-DISC-7, D-DISC-8).

One row per rule and per reason code; every row changes one input of an otherwise
admissible command.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentcall.dispatcher import contracts
from agentcall.dispatcher.domain.admission import (
    Accept,
    Reject,
    TaskView,
    decide,
    decide_local,
)
from agentcall.dispatcher.domain.model import Occupancy, Schedule
from agentcall.dispatcher.domain.reasons import RejectReason as R
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from tests.support import dispatcher_factories as f


def base() -> dict[str, Any]:
    return {
        "command": f.command(),
        "task": f.view(),
        "sip": f.sip(),
        "quota": f.quota(),
        "occupancy": f.occupancy(),
        "now": f.NOW,
    }


def closed_schedule() -> Schedule:
    return Schedule("Asia/Shanghai", ((),) * 7)


ROWS: list[tuple[str, dict[str, Any], R]] = [
    ("D-DISC-8 unknown task", {"task": TaskView(f.D_ID, None, f.task_config())}, R.TASK_UNKNOWN),
    (
        "D-CFG-4 task GET 404 resource_not_found",
        {"task": TaskView(f.D_ID, f.local_task(), None, config_missing=True)},
        R.TASK_UNKNOWN,
    ),
    (
        "D-DISC-8 removed tombstone",
        {"task": f.view(f.local_task(barrier=Barrier.REMOVED))},
        R.TASK_UNKNOWN,
    ),
    (
        "D-CMD-2 other dispatcher",
        {"command": f.command(dispatcher_id="0" * 8 + "-0000-4000-8000-" + "0" * 12)},
        R.IDENTITY_MISMATCH,
    ),
    ("D-CMD-2 other tenant", {"command": f.command(tenant_id="tenant-2")}, R.IDENTITY_MISMATCH),
    (
        "D-CMD-2 other tenant_key",
        {"command": f.command(tenant_key="tenant-b")},
        R.IDENTITY_MISMATCH,
    ),
    (
        "D-DISC-7 paused barrier",
        {"task": f.view(f.local_task(barrier=Barrier.PAUSED))},
        R.TASK_BARRIER,
    ),
    (
        "D-DISC-7 stopped barrier",
        {"task": f.view(f.local_task(barrier=Barrier.STOPPED))},
        R.TASK_BARRIER,
    ),
    (
        "D-DISC-7 discovery says paused",
        {"task": f.view(f.local_task(status=TaskStatus.PAUSED))},
        R.TASK_NOT_RUNNING,
    ),
    (
        "D-CMD-2 finished",
        {"task": f.view(f.local_task(status=TaskStatus.FINISHED))},
        R.TASK_NOT_RUNNING,
    ),
    (
        "D-CMD-2 D-NOTE-3 not_after passed (the boundary itself)",
        {"now": f.NOW, "command": f.command(not_after=f.NOW)},
        R.COMMAND_EXPIRED,
    ),
    (
        "D-NOTE-3 issued_at beyond the clock skew",
        {"command": f.command(issued_at=f.NOW + timedelta(seconds=121))},
        R.INVALID_VALIDITY_WINDOW,
    ),
    (
        "D-NOTE-3 a tighter skew allowance",
        {"command": f.command(issued_at=f.NOW + timedelta(seconds=30)), "skew_s": 10},
        R.INVALID_VALIDITY_WINDOW,
    ),
    (
        "D-CFG-4 config unreadable",
        {"task": TaskView(f.D_ID, f.local_task(), None)},
        R.TASK_CONFIG_UNAVAILABLE,
    ),
    (
        "D-CTL-5 config older than discovery",
        {"task": f.view(f.local_task(task_revision=3))},
        R.TASK_CONFIG_UNAVAILABLE,
    ),
    (
        "D-NOTE-1 config older than the highest revision seen",
        {"task": f.view(f.local_task(seen_revision=5))},
        R.TASK_CONFIG_UNAVAILABLE,
    ),
    (
        "D-CFG-2 config for other tenant",
        {"task": f.view(config=f.task_config(tenant_key="tenant-x"))},
        R.IDENTITY_MISMATCH,
    ),
    (
        "D-CFG-2 config says paused",
        {"task": f.view(config=f.task_config(status=TaskStatus.PAUSED))},
        R.TASK_NOT_RUNNING,
    ),
    (
        "D-CFG-2 agent authorization expired",
        {"task": f.view(config=f.task_config(agent=f.agent(authorization_expires_at=f.NOW)))},
        R.AGENT_AUTHORIZATION_EXPIRED,
    ),
    ("D-CFG-1 no SIP snapshot", {"sip": None}, R.SIP_CONFIG_UNAVAILABLE),
    (
        "D-CFG-1 target not listed",
        {"sip": f.sip(allowed_targets=frozenset({"15830461047"}))},
        R.TARGET_NOT_ALLOWED,
    ),
    (
        "D-NOTE-6 an empty whitelist allows nobody",
        {"sip": f.sip(allowed_targets=frozenset())},
        R.TARGET_NOT_ALLOWED,
    ),
    (
        "D-NOTE-6 an empty whitelist in real mode too",
        {"sip": f.sip(allowed_targets=frozenset(), mode="real")},
        R.TARGET_NOT_ALLOWED,
    ),
    (
        "D-CMD-2 task schedule closed",
        {"task": f.view(config=f.task_config(schedule=closed_schedule()))},
        R.OUTSIDE_SCHEDULE,
    ),
    (
        "D-CMD-2 excluded date",
        {
            "now": datetime(2026, 10, 1, 2, tzinfo=UTC),
            "command": f.command(not_after=datetime(2026, 10, 2, tzinfo=UTC)),
            "quota": f.quota(valid_until=datetime(2026, 10, 2, tzinfo=UTC)),
            "task": f.view(
                config=f.task_config(
                    agent=f.agent(authorization_expires_at=datetime(2026, 10, 2, tzinfo=UTC))
                )
            ),
        },
        R.OUTSIDE_SCHEDULE,
    ),
    (
        "D-CMD-2 trunk schedule closed",
        {"sip": f.sip(f.trunk(schedule=closed_schedule()))},
        R.OUTSIDE_SCHEDULE,
    ),
    ("D-CFG-3 quota unavailable (503)", {"quota": None}, R.TENANT_QUOTA_UNAVAILABLE),
    (
        "D-CFG-3 quota past valid_until",
        {"quota": f.quota(valid_until=f.NOW)},
        R.TENANT_QUOTA_UNAVAILABLE,
    ),
    (
        "D-CFG-3 quota for another tenant",
        {"quota": f.quota(tenant_key="tenant-b")},
        R.TENANT_QUOTA_UNAVAILABLE,
    ),
    ("D-CFG-3 quota zero", {"quota": f.quota(max_concurrent_calls=0)}, R.TENANT_QUOTA_EXHAUSTED),
    ("D-CMD-4 tenant share in use", {"occupancy": f.occupancy(tenant=3)}, R.TENANT_QUOTA_EXHAUSTED),
    (
        "D-CMD-2 task limit in use",
        {"occupancy": f.occupancy(tenant=2, task=2)},
        R.TASK_CONCURRENCY_EXHAUSTED,
    ),
    ("D-CMD-2 trunk full", {"occupancy": f.occupancy(trunk_a=10)}, R.NO_TRUNK_AVAILABLE),
    ("D-CMD-2 trunk disabled", {"sip": f.sip(f.trunk(enabled=False))}, R.NO_TRUNK_AVAILABLE),
    ("D-CMD-2 trunk not loaded", {"sip": f.sip(f.trunk("trunk-z"))}, R.NO_TRUNK_AVAILABLE),
    (
        "D-CMD-2 trunk lacks caller profile",
        {"sip": f.sip(f.trunk(caller_ids={"other": "1"}))},
        R.NO_TRUNK_AVAILABLE,
    ),
    (
        "D-CFG-1 unknown fields unusable in real mode",
        {"sip": f.sip(f.trunk(transport=None), mode="real")},
        R.NO_TRUNK_AVAILABLE,
    ),
]


@pytest.mark.parametrize(("name", "change", "reason"), ROWS, ids=[r[0] for r in ROWS])
def test_reject_rules(name: str, change: dict[str, Any], reason: R) -> None:
    result = decide(**(base() | change))
    assert isinstance(result, Reject), name
    assert result.reason is reason


def test_every_reason_code_has_a_row() -> None:
    """Reason codes documented in one place (the schema) are each covered above."""
    covered = {row[2].value for row in ROWS}
    assert covered == contracts.execute_reject_reasons()


def test_accept_pins_snapshot_d_cmd_3() -> None:
    result = decide(**base())
    assert isinstance(result, Accept)
    plan = result.plan
    assert (plan.trunk_id, plan.caller_id, plan.task_revision) == ("trunk-a", "BD00000000", 2)
    assert plan.agent_version_id == "agent-v1"
    # Effective max duration = min(task max_call_duration_ms, agent conversation.max_duration_ms).
    assert plan.max_duration_ms == 90_000
    assert plan.ring_timeout_ms == 30_000


ACCEPT_ROWS: list[tuple[str, dict[str, Any]]] = [
    ("D-CMD-2 listed target", {"sip": f.sip(allowed_targets=frozenset({"15003164745"}))}),
    (
        "D-CFG-1 null limits usable in mock mode",
        {"sip": f.sip(f.trunk(transport=None, max_concurrent_calls=None))},
    ),
    (
        "D-CMD-4 room below new limit",
        {"quota": f.quota(max_concurrent_calls=3), "occupancy": f.occupancy(tenant=2, task=1)},
    ),
    ("D-CTL-5 newer config is fine", {"task": f.view(config=f.task_config(task_revision=5))}),
    (
        "one second before not_after",
        {"now": f.NOW, "command": f.command(not_after=f.NOW + timedelta(seconds=1))},
    ),
]


@pytest.mark.parametrize(("name", "change"), ACCEPT_ROWS, ids=[r[0] for r in ACCEPT_ROWS])
def test_accept_rules(name: str, change: dict[str, Any]) -> None:
    assert isinstance(decide(**(base() | change)), Accept), name


def test_trunk_choice_first_usable_in_priority_order_d_cmd_2() -> None:
    trunks = (f.trunk("trunk-a", enabled=False), f.trunk("trunk-b"), f.trunk("trunk-c"))
    config = f.task_config(allowed_trunk_ids=("trunk-a", "trunk-b", "trunk-c"))
    result = decide(**(base() | {"sip": f.sip(*trunks), "task": f.view(config=config)}))
    assert isinstance(result, Accept) and result.plan.trunk_id == "trunk-b"


def test_trunk_choice_skips_full_trunk_d_cmd_2() -> None:
    trunks = (f.trunk("trunk-a", max_concurrent_calls=1), f.trunk("trunk-b"))
    config = f.task_config(allowed_trunk_ids=("trunk-a", "trunk-b"))
    occ = Occupancy(tenant=1, task=1, trunks={"trunk-a": 1})
    result = decide(
        **(base() | {"sip": f.sip(*trunks), "task": f.view(config=config), "occupancy": occ})
    )
    assert isinstance(result, Accept) and result.plan.trunk_id == "trunk-b"


def test_trunk_choice_skips_closed_trunk() -> None:
    trunks = (f.trunk("trunk-a", schedule=closed_schedule()), f.trunk("trunk-b"))
    config = f.task_config(allowed_trunk_ids=("trunk-a", "trunk-b"))
    result = decide(**(base() | {"sip": f.sip(*trunks), "task": f.view(config=config)}))
    assert isinstance(result, Accept) and result.plan.trunk_id == "trunk-b"


def test_decision_is_deterministic() -> None:
    assert decide(**base()) == decide(**base())


LOCAL_ROWS: list[tuple[str, dict[str, Any], R | None]] = [
    ("admissible as far as local facts go", {}, None),
    ("expired", {"command": f.command(not_after=f.NOW)}, R.COMMAND_EXPIRED),
    (
        "from the future",
        {"command": f.command(issued_at=f.NOW + timedelta(hours=1))},
        R.INVALID_VALIDITY_WINDOW,
    ),
    ("paused barrier", {"task": f.view(f.local_task(barrier=Barrier.PAUSED))}, R.TASK_BARRIER),
    ("unknown task", {"task": TaskView(f.D_ID, None, None)}, R.TASK_UNKNOWN),
    ("another tenant", {"command": f.command(tenant_id="tenant-2")}, R.IDENTITY_MISMATCH),
]


@pytest.mark.parametrize(("name", "change", "reason"), LOCAL_ROWS, ids=[r[0] for r in LOCAL_ROWS])
def test_a_command_held_by_an_outage_is_judged_on_local_facts_only_d_note_2(
    name: str, change: dict[str, Any], reason: R | None
) -> None:
    """No SaaS data at all (no config, SIP or quota): only the rules that need none."""
    args = {"command": f.command(), "task": TaskView(f.D_ID, f.local_task(), None)} | change
    result = decide_local(args["command"], args["task"], f.NOW)
    assert (result.reason if result else None) is reason
