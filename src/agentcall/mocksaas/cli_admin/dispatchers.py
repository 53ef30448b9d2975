"""``mocksaas admin dispatcher …`` and ``mocksaas admin sip …``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from agentcall.mocksaas.cli_admin.base import Api, admin, drop_none, emit, pass_api


@admin.group()
def dispatcher() -> None:
    """Create, list, show and update dispatchers."""


@dispatcher.command("create")
@click.option("--id", "dispatcher_id", help="Lowercase UUID v4 (default: generated).")
@click.option("--secret", help="Secret key (default: generated).")
@click.option("--page-size", type=int, help="Discovery page size for this dispatcher (1..256).")
@click.option("--id-only", is_flag=True, help="Print only the dispatcher id.")
@pass_api
def dispatcher_create(
    api: Api, /, dispatcher_id: str | None, secret: str | None, page_size: int | None, id_only: bool
) -> None:
    """Create a dispatcher and declare its MQ topology."""
    out = api.call(
        "POST",
        "/dispatchers",
        drop_none(dispatcher_id=dispatcher_id, secret=secret, discovery_page_size=page_size),
    )
    click.echo(out["dispatcher_id"]) if id_only else emit(out)


@dispatcher.command("list")
@pass_api
def dispatcher_list(api: Api) -> None:
    """List dispatchers with their secrets and topology names."""
    emit(api.call("GET", "/dispatchers"))


@dispatcher.command("show")
@click.argument("dispatcher_id")
@pass_api
def dispatcher_show(api: Api, /, dispatcher_id: str) -> None:
    """Show one dispatcher (secret, page size, event log head, topology)."""
    emit(api.call("GET", f"/dispatchers/{dispatcher_id}"))


@dispatcher.command("update")
@click.argument("dispatcher_id")
@click.option(
    "--authorized/--unauthorized",
    default=None,
    help="--unauthorized makes its GETs answer 403 dispatcher_not_authorized.",
)
@click.option("--page-size", type=int, help="Discovery page size (1..256).")
@pass_api
def dispatcher_update(
    api: Api, /, dispatcher_id: str, authorized: bool | None, page_size: int | None
) -> None:
    """Disable/enable a dispatcher or change its discovery page size."""
    emit(
        api.call(
            "PATCH",
            f"/dispatchers/{dispatcher_id}",
            drop_none(authorized=authorized, discovery_page_size=page_size),
        )
    )


@admin.group()
def sip() -> None:
    """SIP snapshot of a dispatcher."""


@sip.command("set")
@click.argument("dispatcher_id")
@click.option(
    "--file",
    "file",
    type=click.Path(exists=True, path_type=Path),
    help="Full snapshot JSON instead of the builder.",
)
@click.option("--time-zone", help="Trunk schedule time zone (default Asia/Shanghai, 24x7).")
@click.option(
    "--allowed-target",
    "allowed_targets",
    multiple=True,
    help="Allowed callee (repeat); none given = the default whitelist of the"
    " generated callees 15000000000..15000000999.",
)
@click.option("--max-concurrent-calls", type=int, help="Trunk limit (default 30).")
@click.option("--trunk-id", help="Trunk id (default trunk-mock).")
@click.option("--caller-profile-id", help="Caller profile id (default caller-profile-mock).")
@click.option("--caller-id", help="Raw caller id (default BD00000000).")
@click.option("--mode", type=click.Choice(["mock", "real"]), help="Artifact mode (default mock).")
@pass_api
def sip_set(
    api: Api,
    /,
    dispatcher_id: str,
    file: Path | None,
    time_zone: str | None,
    allowed_targets: tuple[str, ...],
    max_concurrent_calls: int | None,
    trunk_id: str | None,
    caller_profile_id: str | None,
    caller_id: str | None,
    mode: str | None,
) -> None:
    """Set the approved SIP snapshot (revision +1); default: one trunk open 24x7."""
    body = (
        {"snapshot": json.loads(file.read_text())}
        if file
        else drop_none(
            time_zone=time_zone,
            allowed_targets=list(allowed_targets) or None,
            max_concurrent_calls=max_concurrent_calls,
            trunk_id=trunk_id,
            caller_profile_id=caller_profile_id,
            caller_id=caller_id,
            mode=mode,
        )
    )
    emit(api.call("PUT", f"/dispatchers/{dispatcher_id}/sip", body))


@dispatcher.command("delete")
@click.argument("dispatcher_id")
@pass_api
def dispatcher_delete(api: Api, /, dispatcher_id: str) -> None:
    """Delete a dispatcher's queues (task, control, result) and all its stored state."""
    emit(api.call("DELETE", f"/dispatchers/{dispatcher_id}"))
