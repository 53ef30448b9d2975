"""``mocksaas admin results|events|fault …``."""

from __future__ import annotations

from typing import Any

import click

from agentcall.mocksaas.cli_admin.base import Api, admin, drop_none, emit, pass_api


@admin.group()
def results() -> None:
    """Results received from a dispatcher."""


@results.command("list")
@click.argument("dispatcher_id")
@click.option("--event-type", type=click.Choice(["command.result", "call.result"]))
@click.option("--status", help="payload.status (accepted, rejected, applied…).")
@click.option("--task-id")
@click.option("--invalid", is_flag=True, help="Only results that break the contract.")
@click.option("--limit", type=int, default=1000, show_default=True)
@pass_api
def results_list(api: Api, /, dispatcher_id: str, invalid: bool, **opts: Any) -> None:
    """Stored results, oldest first, with validity and delivery counts."""
    params = drop_none(**opts, invalid="1" if invalid else None)
    emit(api.call("GET", f"/dispatchers/{dispatcher_id}/results", params=params))


@results.command("summary")
@click.argument("dispatcher_id")
@pass_api
def results_summary(api: Api, /, dispatcher_id: str) -> None:
    """Counts by event_type/status/reason_code/outcome, duplicates, invalid."""
    emit(api.call("GET", f"/dispatchers/{dispatcher_id}/results/summary"))


@admin.group()
def events() -> None:
    """The discovery event log of a dispatcher."""


@events.command("head")
@click.argument("dispatcher_id")
@pass_api
def events_head(api: Api, /, dispatcher_id: str) -> None:
    """Last event id (an `after` beyond it is 400 invalid_cursor)."""
    emit(api.call("GET", f"/dispatchers/{dispatcher_id}/events/head"))


@events.command("list")
@click.argument("dispatcher_id")
@click.option("--after", type=int, default=0, show_default=True)
@click.option("--limit", type=int, default=1000, show_default=True)
@pass_api
def events_list(api: Api, /, dispatcher_id: str, after: int, limit: int) -> None:
    """Every event after --after (the full log, not the latest-per-task page)."""
    emit(
        api.call(
            "GET", f"/dispatchers/{dispatcher_id}/events", params={"after": after, "limit": limit}
        )
    )


@admin.group()
def fault() -> None:
    """Fault injection."""


COUNT = click.option("--count", type=int, help="How many responses (default 1).")
DELAY = click.option("--delay-ms", type=int, help="Delay of the `slow` kind.")


@fault.command("discovery")
@click.argument("dispatcher_id")
@click.argument(
    "kind",
    type=click.Choice(
        [
            "unavailable",
            "malformed_json",
            "schema_invalid",
            "duplicate_task",
            "non_advancing_cursor",
            "identity_conflict",
            "revision_backwards",
            "slow",
        ]
    ),
)
@COUNT
@DELAY
@pass_api
def fault_discovery(api: Api, /, dispatcher_id: str, kind: str, **opts: Any) -> None:
    """Make the next N discovery responses faulty."""
    emit(
        api.call(
            "POST", f"/dispatchers/{dispatcher_id}/faults/discovery", drop_none(kind=kind, **opts)
        )
    )


@fault.command("config")
@click.argument("dispatcher_id")
@click.argument("resource", type=click.Choice(["sip", "task", "quota"]))
@click.argument(
    "kind",
    type=click.Choice(
        [
            "not_found",
            "unavailable",
            "malformed_json",
            "schema_invalid",
            "identity_conflict",
            "slow",
        ]
    ),
)
@click.option("--target", help="task_id or tenant_id (default: any).")
@COUNT
@DELAY
@pass_api
def fault_config(api: Api, /, dispatcher_id: str, resource: str, kind: str, **opts: Any) -> None:
    """Make the next N config GETs of RESOURCE faulty."""
    emit(
        api.call(
            "POST",
            f"/dispatchers/{dispatcher_id}/faults/config",
            drop_none(resource=resource, kind=kind, **opts),
        )
    )


@fault.command("raw")
@click.argument("dispatcher_id")
@click.argument("body")
@click.option("--task", "task_id", help="Publish to this task's route.")
@click.option("--control", is_flag=True, help="Publish to the control route.")
@pass_api
def fault_raw(
    api: Api, /, dispatcher_id: str, body: str, task_id: str | None, control: bool
) -> None:
    """Publish a raw (invalid) BODY to a task queue or the control queue."""
    if bool(task_id) == control:
        raise click.UsageError("give exactly one of --task TASK_ID or --control")
    target = "control" if control else "task"
    emit(
        api.call(
            "POST",
            f"/dispatchers/{dispatcher_id}/faults/raw",
            drop_none(target=target, task_id=task_id, body=body),
        )
    )


@fault.command("list")
@click.argument("dispatcher_id")
@pass_api
def fault_list(api: Api, /, dispatcher_id: str) -> None:
    """Armed faults and how many uses remain."""
    emit(api.call("GET", f"/dispatchers/{dispatcher_id}/faults"))


@fault.command("clear")
@click.argument("dispatcher_id")
@pass_api
def fault_clear(api: Api, /, dispatcher_id: str) -> None:
    """Disarm every fault of a dispatcher."""
    emit(api.call("DELETE", f"/dispatchers/{dispatcher_id}/faults"))
