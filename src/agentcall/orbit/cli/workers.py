"""`orbit worker`: `orbit worker list` lists the workers of every server process (through the
API); anything else runs a worker, exactly the SDK's `orbit worker --app ...` command (its
options and `--help` included). Imports no server module, so a worker starts fast."""

from __future__ import annotations

import json
from typing import Any

import click

from agentcall.orbit.cli.table import table
from agentcall.orbit.sdk.worker.cli import worker as run_worker

HELP = ("-h", "--help")


class WorkerGroup(click.Group):
    """A group whose only subcommand is `list`; other arguments go to the worker command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in self.commands:
            return super().parse_args(ctx, args)
        ctx.meta["orbit.worker.args"] = list(args)
        return []

    def invoke(self, ctx: click.Context) -> Any:
        if "orbit.worker.args" in ctx.meta:
            args = ctx.meta["orbit.worker.args"]
            if any(arg in HELP for arg in args):  # this group's help: the worker's, and list
                click.echo(ctx.get_help(), color=ctx.color)
                ctx.exit()
            # the worker command runs in this group's place: its usage and errors say
            # `orbit worker`, as typed
            with run_worker.make_context(ctx.info_name, args, parent=ctx.parent) as sub:
                return run_worker.invoke(sub)
        return super().invoke(ctx)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        run_worker.format_help(ctx, formatter)
        formatter.write_paragraph()
        formatter.write_text(
            "orbit worker list [--json]: the workers connected to any server process."
        )


@click.group(
    "worker",
    cls=WorkerGroup,
    add_help_option=False,
    context_settings={"ignore_unknown_options": True},
)
def worker() -> None:
    """Run a worker (--app MODULE:ATTRIBUTE), or `list` the connected workers."""


@worker.command("list")
@click.option("--url", help="API base URL; env ORBIT_URL.")
@click.option("--token", help="API token with tasks:read; env ORBIT_TOKEN.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def worker_list(url: str | None, token: str | None, as_json: bool) -> None:
    """Workers connected to the server process that answers, on the token's queues."""
    from agentcall.orbit.domain.errors import OrbitError
    from agentcall.orbit.domain.times import format_time
    from agentcall.orbit.sdk.client import Client, OrbitClientError
    from agentcall.orbit.sdk.settings import client_settings

    try:
        settings = client_settings(url, token)
        with Client(settings.url, settings.token) as client:
            found = client.list_workers()
    except (OrbitClientError, OrbitError) as exc:
        click.echo(f"orbit: error: {exc}", err=True)
        raise SystemExit(1) from None
    if as_json:
        click.echo(json.dumps({"items": [_worker_json(w) for w in found]}))
        return
    rows = [
        [
            w.name,
            f"{w.host or ''}:{w.pid or ''}",
            w.server,
            " ".join(w.queues),
            " ".join(f"{h}@{v}" for h, v in w.handlers),
            f"{w.in_flight}/{w.slots}",
            format_time(w.connected_at),
            format_time(w.last_heartbeat_at),
        ]
        for w in found
    ]
    click.echo(
        table(
            [
                "NAME",
                "HOST:PID",
                "SERVER",
                "QUEUES",
                "HANDLERS",
                "IN FLIGHT",
                "CONNECTED",
                "LAST HEARTBEAT",
            ],
            rows,
        )
    )


def _worker_json(w: Any) -> dict[str, Any]:
    from agentcall.orbit.domain.times import format_time

    return {
        "connection_id": w.connection_id,
        "server": w.server,
        "name": w.name,
        "instance_id": w.instance_id,
        "host": w.host,
        "pid": w.pid,
        "sdk": w.sdk,
        "queues": list(w.queues),
        "handlers": [{"handler": h, "handler_version": v} for h, v in w.handlers],
        "slots": w.slots,
        "in_flight": w.in_flight,
        "connected_at": format_time(w.connected_at),
        "last_heartbeat_at": format_time(w.last_heartbeat_at),
    }
