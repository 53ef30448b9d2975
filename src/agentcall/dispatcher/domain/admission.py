"""Admission of a call.execute: one pure function (D-CMD-2, D-CMD-3, D-CFG-1..3, D-DISC-7).

``decide(command, task, sip, quota, occupancy, now)`` checks, in order, and returns the
first failing rule as :class:`Reject` or an :class:`Accept` carrying the execution plan
that the accepted execution pins. Reason codes:
:class:`~agentcall.dispatcher.domain.reasons.RejectReason`.

===============================  ==========================================================
rule                             reason
===============================  ==========================================================
task known, not removed, owned   task_unknown (also a 404 resource_not_found task GET)
envelope identity = task         identity_mismatch (dispatcher_id, tenant_id, tenant_key)
no local barrier                 task_barrier (paused / stopped, D-DISC-7)
discovered status running        task_not_running
issued_at not in the future      invalid_validity_window (beyond the clock skew, D-NOTE-3)
not_after not passed             command_expired (now >= not_after, D-NOTE-3)
task config readable, current    task_config_unavailable (missing or below the highest
                                 revision seen, D-NOTE-1)
config identity = envelope       identity_mismatch
config status running            task_not_running
agent authorization valid        agent_authorization_expired
SIP snapshot verified            sip_config_unavailable
callee in allowed_targets        target_not_allowed (an empty list allows nobody, D-NOTE-6)
task schedule open               outside_schedule
tenant quota valid               tenant_quota_unavailable
tenant occupancy < quota         tenant_quota_exhausted
task occupancy < task limit      task_concurrency_exhausted
a trunk can take it              outside_schedule (all usable trunks closed) /
                                 no_trunk_available
===============================  ==========================================================

The first five rules need no SaaS read: :func:`decide_local` applies them alone to a
command held by a SaaS outage (D-NOTE-2), so an expired one still gets its one
``command_expired`` while the others wait in their queue.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from agentcall.dispatcher.domain.model import (
    ExecuteCommand,
    LocalTask,
    Occupancy,
    SipSnapshot,
    TaskConfig,
    TenantQuota,
)
from agentcall.dispatcher.domain.reasons import RejectReason
from agentcall.dispatcher.domain.schedule import closed_reason
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from agentcall.dispatcher.domain.trunks import NoTrunk, choose_trunk
from agentcall.dispatcher.domain.validity import DEFAULT_CLOCK_SKEW_S, Validity, validity


@dataclass(frozen=True)
class TaskView:
    """Everything admission knows about the command's task."""

    dispatcher_id: str
    local: LocalTask | None
    config: TaskConfig | None
    config_missing: bool = False


@dataclass(frozen=True)
class Plan:
    """The pinned snapshot of an accepted execution (D-CMD-3)."""

    command_id: str
    trace_id: str
    task_id: str
    tenant_id: str
    tenant_key: str
    task_revision: int
    callee: str
    agent_version_id: str
    authorization_id: str
    agent_mode: str
    agent_config_json: str
    route_policy_id: str
    caller_profile_id: str
    caller_id: str
    trunk_id: str
    trunk_spec_json: str
    ring_timeout_ms: int
    max_duration_ms: int
    sip_revision: int
    sip_mode: str
    amd: str | None = None  # answering machines: the D's setting (None: the cell's default)


@dataclass(frozen=True)
class Accept:
    plan: Plan


@dataclass(frozen=True)
class Reject:
    reason: RejectReason
    detail: str


@dataclass(frozen=True)
class _Ctx:
    command: ExecuteCommand
    task: TaskView
    sip: SipSnapshot | None
    quota: TenantQuota | None
    occupancy: Occupancy
    now: datetime
    skew_s: float = DEFAULT_CLOCK_SKEW_S


def _known(c: _Ctx) -> Reject | None:
    local = c.task.local
    if local is None or local.barrier is Barrier.REMOVED or local.status is TaskStatus.REMOVED:
        return Reject(RejectReason.TASK_UNKNOWN, "task is not (or no longer) assigned to this D")
    if c.task.config_missing:
        return Reject(RejectReason.TASK_UNKNOWN, "task is not (or no longer) assigned to this D")
    return None


def _envelope_identity(c: _Ctx) -> Reject | None:
    local, cmd = c.task.local, c.command
    assert local is not None
    if cmd.dispatcher_id != c.task.dispatcher_id:
        return Reject(RejectReason.IDENTITY_MISMATCH, "dispatcher_id is not this D")
    if (cmd.tenant_id, cmd.tenant_key) != (local.tenant_id, local.tenant_key):
        return Reject(RejectReason.IDENTITY_MISMATCH, "tenant does not own the task")
    return None


def _barrier(c: _Ctx) -> Reject | None:
    assert c.task.local is not None
    barrier = c.task.local.barrier
    if barrier is not Barrier.NONE:
        return Reject(RejectReason.TASK_BARRIER, f"task has a local {barrier} barrier")
    return None


def _discovered_running(c: _Ctx) -> Reject | None:
    assert c.task.local is not None
    if c.task.local.status is not TaskStatus.RUNNING:
        return Reject(RejectReason.TASK_NOT_RUNNING, f"task is {c.task.local.status}")
    return None


def _in_window(c: _Ctx) -> Reject | None:
    window = validity(c.command.issued_at, c.command.not_after, c.now, c.skew_s)
    if window is Validity.INVALID_WINDOW:
        return Reject(RejectReason.INVALID_VALIDITY_WINDOW, "issued_at lies in the future")
    if window is Validity.EXPIRED:
        return Reject(RejectReason.COMMAND_EXPIRED, "not_after has passed")
    return None


def stale(config: TaskConfig, local: LocalTask) -> bool:
    """A config below the highest revision seen never feeds admission (D-NOTE-1)."""
    return config.task_revision < max(local.task_revision, local.seen_revision)


def _config_current(c: _Ctx) -> Reject | None:
    config, local = c.task.config, c.task.local
    assert local is not None
    if config is None:
        return Reject(RejectReason.TASK_CONFIG_UNAVAILABLE, "task config could not be read")
    if stale(config, local):
        return Reject(RejectReason.TASK_CONFIG_UNAVAILABLE, "task config is older than seen")
    return None


def _config_identity(c: _Ctx) -> Reject | None:
    config, cmd = c.task.config, c.command
    assert config is not None
    ids = (config.dispatcher_id, config.task_id, config.tenant_id, config.tenant_key)
    if ids != (cmd.dispatcher_id, cmd.task_id, cmd.tenant_id, cmd.tenant_key):
        return Reject(RejectReason.IDENTITY_MISMATCH, "task config identity differs from command")
    if config.status is not TaskStatus.RUNNING:
        return Reject(RejectReason.TASK_NOT_RUNNING, f"task config says {config.status}")
    return None


def _agent_authorized(c: _Ctx) -> Reject | None:
    assert c.task.config is not None
    if c.now >= c.task.config.agent.authorization_expires_at:
        return Reject(RejectReason.AGENT_AUTHORIZATION_EXPIRED, "agent authorization expired")
    return None


def _sip_loaded(c: _Ctx) -> Reject | None:
    if c.sip is None or c.sip.dispatcher_id != c.task.dispatcher_id:
        return Reject(RejectReason.SIP_CONFIG_UNAVAILABLE, "no verified SIP snapshot")
    return None


def _target_allowed(c: _Ctx) -> Reject | None:
    assert c.sip is not None
    if c.command.callee not in c.sip.allowed_targets:
        return Reject(RejectReason.TARGET_NOT_ALLOWED, "callee is not in allowed_targets")
    return None


def _task_schedule(c: _Ctx) -> Reject | None:
    assert c.task.config is not None
    closed = closed_reason(c.task.config.schedule, c.now)
    if closed is not None:
        return Reject(RejectReason.OUTSIDE_SCHEDULE, f"task schedule closed: {closed}")
    return None


def _tenant_quota(c: _Ctx) -> Reject | None:
    quota, config = c.quota, c.task.config
    assert config is not None
    if quota is None or c.now >= quota.valid_until:
        return Reject(RejectReason.TENANT_QUOTA_UNAVAILABLE, "no valid tenant quota")
    if (quota.tenant_id, quota.tenant_key) != (config.tenant_id, config.tenant_key):
        return Reject(RejectReason.TENANT_QUOTA_UNAVAILABLE, "quota identity differs from task")
    if c.occupancy.tenant >= quota.max_concurrent_calls:
        return Reject(RejectReason.TENANT_QUOTA_EXHAUSTED, "tenant share on this D is in use")
    return None


def _task_concurrency(c: _Ctx) -> Reject | None:
    assert c.task.config is not None
    if c.occupancy.task >= c.task.config.max_concurrent_calls:
        return Reject(RejectReason.TASK_CONCURRENCY_EXHAUSTED, "task max_concurrent_calls in use")
    return None


_LOCAL: tuple[Callable[[_Ctx], Reject | None], ...] = (
    _known,
    _envelope_identity,
    _barrier,
    _discovered_running,
    _in_window,
)
_CHECKS: tuple[Callable[[_Ctx], Reject | None], ...] = (
    *_LOCAL,
    _config_current,
    _config_identity,
    _agent_authorized,
    _sip_loaded,
    _target_allowed,
    _task_schedule,
    _tenant_quota,
    _task_concurrency,
)


def decide(
    command: ExecuteCommand,
    task: TaskView,
    sip: SipSnapshot | None,
    quota: TenantQuota | None,
    occupancy: Occupancy,
    now: datetime,
    skew_s: float = DEFAULT_CLOCK_SKEW_S,
    *,
    amd: str | None = None,
) -> Accept | Reject:
    """Admit or reject ``command`` at ``now``; the caller reserves occupancy on Accept.
    ``amd``: the D's answering-machine setting, pinned in the plan (None: the cell's)."""
    ctx = _Ctx(command, task, sip, quota, occupancy, now, skew_s)
    for check in _CHECKS:
        rejected = check(ctx)
        if rejected is not None:
            return rejected
    assert task.config is not None and sip is not None
    choice = choose_trunk(task.config, sip, occupancy, now)
    if isinstance(choice, NoTrunk):
        return Reject(choice.reason, choice.detail)
    plan = _plan(command, task.config, sip, choice.trunk.trunk_id, choice.caller_id)
    return Accept(plan if amd is None else replace(plan, amd=amd))


def decide_local(
    command: ExecuteCommand, task: TaskView, now: datetime, skew_s: float = DEFAULT_CLOCK_SKEW_S
) -> Reject | None:
    """The rules that need no SaaS read (see the module docstring), or None if all hold."""
    ctx = _Ctx(command, task, None, None, Occupancy(), now, skew_s)
    for check in _LOCAL:
        rejected = check(ctx)
        if rejected is not None:
            return rejected
    return None


def _plan(
    command: ExecuteCommand, config: TaskConfig, sip: SipSnapshot, trunk_id: str, caller_id: str
) -> Plan:
    agent = config.agent
    return Plan(
        command_id=command.command_id,
        trace_id=command.trace_id,
        task_id=config.task_id,
        tenant_id=config.tenant_id,
        tenant_key=config.tenant_key,
        task_revision=config.task_revision,
        callee=command.callee,
        agent_version_id=agent.agent_version_id,
        authorization_id=agent.authorization_id,
        agent_mode=agent.mode,
        agent_config_json=agent.config_json,
        route_policy_id=config.route_policy_id,
        caller_profile_id=config.caller_profile_id,
        caller_id=caller_id,
        trunk_id=trunk_id,
        trunk_spec_json=json.dumps(sip.trunks[trunk_id].spec(), sort_keys=True),
        ring_timeout_ms=config.ring_timeout_ms,
        max_duration_ms=min(config.max_call_duration_ms, agent.max_duration_ms),
        sip_revision=sip.revision,
        sip_mode=sip.mode,
    )
