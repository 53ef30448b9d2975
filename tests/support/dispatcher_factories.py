"""Builders of valid domain objects for table tests; override fields with ``replace``."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

from agentcall.dispatcher.domain.admission import TaskView
from agentcall.dispatcher.domain.model import (
    Agent,
    ExecuteCommand,
    LocalTask,
    Occupancy,
    Schedule,
    SipSnapshot,
    TaskConfig,
    TenantQuota,
    Trunk,
    Window,
)
from agentcall.dispatcher.domain.states import TaskStatus

D_ID = "c046b893-8628-4589-ae50-619d049248a6"
# Monday 2026-09-21 10:00 in Asia/Shanghai.
NOW = datetime(2026, 9, 21, 2, 0, tzinfo=UTC)
ALL_DAY = (Window(0, 1440),)


def week(*windows: Window, weekend: tuple[Window, ...] = ()) -> tuple[tuple[Window, ...], ...]:
    return (tuple(windows),) * 5 + (weekend, weekend)


def schedule(**kw: Any) -> Schedule:
    base = Schedule(time_zone="Asia/Shanghai", weekly=week(Window(9 * 60, 18 * 60)))
    return replace(base, **kw)


def trunk(trunk_id: str = "trunk-a", **kw: Any) -> Trunk:
    base = Trunk(
        trunk_id=trunk_id,
        enabled=True,
        caller_ids={"caller-1": "BD00000000"},
        dial_prefix="",
        media_profile_id="pcma-8k",
        max_concurrent_calls=10,
        transport="udp",
        auth_mode="digest",
        registration_required=False,
        schedule=Schedule(time_zone="Asia/Shanghai", weekly=(ALL_DAY,) * 7),
    )
    return replace(base, **kw)


CALLEE = "15003164745"


def sip(*trunks: Trunk, **kw: Any) -> SipSnapshot:
    chosen = trunks or (trunk(),)
    base = SipSnapshot(
        dispatcher_id=D_ID,
        revision=1,
        snapshot_sha256="c" * 64,
        mode="mock",
        allowed_targets=frozenset({CALLEE}),  # a whitelist: the default callee only
        trunks={t.trunk_id: t for t in chosen},
    )
    return replace(base, **kw)


def agent(**kw: Any) -> Agent:
    base = Agent(
        agent_version_id="agent-v1",
        authorization_id="auth-1",
        authorization_expires_at=datetime(2026, 9, 22, tzinfo=UTC),
        mode="full_ai",
        max_duration_ms=90_000,
        config_json='{"agent_version_id":"agent-v1"}',
        content_sha256="a" * 64,
    )
    return replace(base, **kw)


def task_config(**kw: Any) -> TaskConfig:
    base = TaskConfig(
        dispatcher_id=D_ID,
        task_id="task-a",
        tenant_id="tenant-1",
        tenant_key="tenant-a",
        task_revision=2,
        status=TaskStatus.RUNNING,
        max_concurrent_calls=2,
        ring_timeout_ms=30_000,
        max_call_duration_ms=120_000,
        route_policy_id="route-1",
        caller_profile_id="caller-1",
        allowed_trunk_ids=("trunk-a",),
        schedule=schedule(excluded_dates=frozenset({date(2026, 10, 1)})),
        agent=agent(),
    )
    return replace(base, **kw)


def local_task(**kw: Any) -> LocalTask:
    base = LocalTask(
        task_id="task-a",
        tenant_id="tenant-1",
        tenant_key="tenant-a",
        status=TaskStatus.RUNNING,
        task_revision=2,
    )
    return replace(base, **kw)


def view(local: LocalTask | None = None, config: TaskConfig | None = None, **kw: Any) -> TaskView:
    return TaskView(
        dispatcher_id=kw.get("dispatcher_id", D_ID),
        local=local if local is not None else local_task(),
        config=config if config is not None else task_config(),
    )


def quota(**kw: Any) -> TenantQuota:
    base = TenantQuota(
        tenant_id="tenant-1",
        tenant_key="tenant-a",
        quota_revision=1,
        max_concurrent_calls=3,
        valid_until=datetime(2026, 9, 21, 10, tzinfo=UTC),
    )
    return replace(base, **kw)


def command(**kw: Any) -> ExecuteCommand:
    base = ExecuteCommand(
        command_id="command-1",
        dispatcher_id=D_ID,
        tenant_id="tenant-1",
        tenant_key="tenant-a",
        trace_id="trace-1",
        issued_at=datetime(2026, 9, 21, 1, 59, tzinfo=UTC),
        not_after=datetime(2026, 9, 21, 2, 15, tzinfo=UTC),
        task_id="task-a",
        callee=CALLEE,
    )
    return replace(base, **kw)


def occupancy(tenant: int = 0, task: int = 0, **trunks: int) -> Occupancy:
    return Occupancy(
        tenant=tenant, task=task, trunks={k.replace("_", "-"): v for k, v in trunks.items()}
    )
