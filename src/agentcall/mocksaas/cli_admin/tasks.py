"""``mocksaas admin task|quota|call …``."""

from __future__ import annotations

import json
import uuid
from typing import Any

import click

from agentcall.mocksaas.cli_admin.base import Api, admin, drop_none, emit, pass_api


@admin.group()
def task() -> None:
    """Task configs and the authoritative task status."""


@task.command("put")
@click.argument("dispatcher_id")
@click.argument("task_id")
@click.option("--tenant-id", help="Tenant id (required on create).")
@click.option("--tenant-key", help="Tenant key (required on create).")
@click.option("--mode", type=click.Choice(["full_ai", "asr_only"]), help="Agent mode.")
@click.option(
    "--status",
    type=click.Choice(["running", "paused"]),
    help="Initial status on create (default running).",
)
@click.option("--max-concurrent-calls", type=int, help="Task limit (default 10).")
@click.option("--ring-timeout-ms", type=int, help="Default 30000.")
@click.option("--max-call-duration-ms", type=int, help="Default 120000.")
@click.option(
    "--allowed-trunk-id",
    "allowed_trunk_ids",
    multiple=True,
    help="Trunk candidates in order (repeat; default trunk-mock).",
)
@click.option("--caller-profile-id", help="Default caller-profile-mock.")
@click.option("--time-zone", help="Time zone of the default 24x7 schedule.")
@click.option("--authorization-expires-at", help="RFC 3339 (default 2099-12-31T23:59:59Z).")
@click.option("--agent-version-id", help="Default: derived from the agent config content.")
@click.option("--json", "extra", help="More spec fields as JSON (schedule, agent_config…).")
@pass_api
def task_put(
    api: Api,
    /,
    dispatcher_id: str,
    task_id: str,
    extra: str | None,
    allowed_trunk_ids: tuple[str, ...],
    **opts: Any,
) -> None:
    """Create or update a task config (revision +1, one discovery event).

    On create the task queue and its binding are declared first.
    """
    body = drop_none(**opts, allowed_trunk_ids=list(allowed_trunk_ids) or None)
    body.update(json.loads(extra) if extra else {})
    emit(api.call("PUT", f"/dispatchers/{dispatcher_id}/tasks/{task_id}", body))


@task.command("show")
@click.argument("dispatcher_id")
@click.argument("task_id")
@pass_api
def task_show(api: Api, /, dispatcher_id: str, task_id: str) -> None:
    """Show a task: status, revision, queue_state, removed tombstone, config."""
    emit(api.call("GET", f"/dispatchers/{dispatcher_id}/tasks/{task_id}"))


@task.command("list")
@click.argument("dispatcher_id")
@pass_api
def task_list(api: Api, /, dispatcher_id: str) -> None:
    """List the tasks of a dispatcher."""
    emit(api.call("GET", f"/dispatchers/{dispatcher_id}/tasks"))


POLICY = click.option(
    "--policy",
    "active_call_policy",
    type=click.Choice(["drain", "hangup"]),
    help="Active calls on pause/stop (default drain).",
)
REASON = click.option("--reason", help="Free text carried in the control.")


@task.command("status")
@click.argument("dispatcher_id")
@click.argument("task_id")
@click.argument("status", type=click.Choice(["running", "paused", "stopped", "finished"]))
@POLICY
@REASON
@pass_api
def task_status(
    api: Api,
    /,
    dispatcher_id: str,
    task_id: str,
    status: str,
    active_call_policy: str | None,
    reason: str | None,
) -> None:
    """Change the status: persist + discovery event, then publish the matching control.

    paused -> pause, running -> resume, stopped -> stop, finished -> no control.
    After the D's stopped/applied receipt the queue is retired and `removed` appended.
    """
    emit(
        api.call(
            "POST",
            f"/dispatchers/{dispatcher_id}/tasks/{task_id}/status",
            drop_none(status=status, active_call_policy=active_call_policy, reason=reason),
        )
    )


@task.command("control")
@click.argument("dispatcher_id")
@click.argument("task_id")
@click.argument("action", type=click.Choice(["pause", "resume", "stop"]))
@POLICY
@REASON
@pass_api
def task_control(
    api: Api,
    /,
    dispatcher_id: str,
    task_id: str,
    action: str,
    active_call_policy: str | None,
    reason: str | None,
) -> None:
    """Publish a task.control WITHOUT changing the status (mismatch/out-of-order tests)."""
    emit(
        api.call(
            "POST",
            f"/dispatchers/{dispatcher_id}/tasks/{task_id}/controls",
            drop_none(action=action, active_call_policy=active_call_policy, reason=reason),
        )
    )


@admin.group()
def quota() -> None:
    """Tenant quotas."""


@quota.command("set")
@click.argument("dispatcher_id")
@click.argument("tenant_id")
@click.option("--max", "max_concurrent_calls", type=int, help="Tenant share on this D (0 ok).")
@click.option("--unavailable", is_flag=True, help="GET answers 503 tenant_quota_unavailable.")
@click.option("--tenant-key", help="Needed only when the tenant has no task on this D.")
@click.option("--valid-for-s", type=int, help="valid_until = GET time + this (default 3600).")
@click.option("--valid-until", help="Fixed RFC 3339 valid_until (503 once past).")
@pass_api
def quota_set(
    api: Api, /, dispatcher_id: str, tenant_id: str, unavailable: bool, **opts: Any
) -> None:
    """Set a tenant quota: --max N (0 forbids admission) or --unavailable."""
    body = drop_none(**opts, unavailable=True if unavailable else None)
    emit(api.call("PUT", f"/dispatchers/{dispatcher_id}/tenants/{tenant_id}/quota", body))


@admin.command("call")
@click.argument("dispatcher_id")
@click.argument("task_id")
@click.option("--count", type=int, help="N calls with generated callees 1500000xxxx.")
@click.option("--callee", "callees", multiple=True, help="Explicit callee (repeat).")
@click.option("--callee-start", type=int, help="Offset of the generated callees.")
@click.option("--not-after-s", type=int, help="not_after = now + this (default 900; <0 expired).")
@click.option("--command-id", help="Explicit command_id (one call; publish twice = duplicate).")
@click.option(
    "--idempotency-key",
    help="Key of this request (default: a new one); a retry with"
    " the same key publishes nothing new.",
)
@pass_api
def call(
    api: Api,
    /,
    dispatcher_id: str,
    task_id: str,
    callees: tuple[str, ...],
    idempotency_key: str | None,
    **opts: Any,
) -> None:
    """Publish call.execute to a running or paused task (confirmed, mandatory).

    Prints the command ids and the state of each (confirmed, or pending: stored and
    published by the Mock SaaS once the broker is back). Transport errors and 5xx are
    retried with the same Idempotency-Key, so a retry never dials anyone twice."""
    body = drop_none(**opts, callees=list(callees) or None)
    key = idempotency_key or str(uuid.uuid4())
    emit(
        api.call(
            "POST",
            f"/dispatchers/{dispatcher_id}/tasks/{task_id}/calls",
            body,
            idempotency_key=key,
            attempts=4,
        )
    )
