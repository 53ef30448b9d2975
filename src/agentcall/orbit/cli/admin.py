"""Operator commands: `orbit init`, `orbit queue create`, `orbit token create|revoke`. The
database modules are imported when a command runs: the `queue` and `token` groups also hold
client commands (`agentcall.orbit.cli.inspect_commands`) that work from the base install."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from agentcall.orbit.cli.common import (
    database_option,
    emit,
    json_option,
    parse_expiry,
    with_database,
)
from agentcall.orbit.domain.tokens import Permission

if TYPE_CHECKING:
    from agentcall.orbit.store.admin import Admin
    from agentcall.orbit.store.db import Database

PERMISSIONS = click.Choice([p.value for p in Permission])


def _admin(db: Database) -> Admin:
    from agentcall.orbit.store.admin import Admin

    return Admin(db)


@click.command()
@database_option
@click.option("--namespace", required=True, help="Name of the new namespace.")
@click.option("--queue", required=True, help="Name of its first queue.")
@json_option
@click.option(
    "--env",
    "as_env",
    is_flag=True,
    help="Print shell `export` lines (ORBIT_TOKEN, ORBIT_QUEUE_ID, "
    'ORBIT_WORKER_QUEUES, ORBIT_NAMESPACE_ID), for eval "$(orbit init ... --env)".',
)
def init(database: str, namespace: str, queue: str, as_json: bool, as_env: bool) -> None:
    """Create a namespace, a queue and a token with every permission on that queue.
    The token is shown once; only its hash is stored."""
    made = with_database(database, lambda db: _admin(db).init(namespace, queue))
    if as_env:
        click.echo(
            f"export ORBIT_TOKEN={made.token} ORBIT_QUEUE_ID={made.queue_id} "
            f"ORBIT_WORKER_QUEUES={made.queue_id} ORBIT_NAMESPACE_ID={made.namespace_id}"
        )
        return
    emit(
        {"namespace_id": made.namespace_id, "queue_id": made.queue_id, "token": made.token},
        as_json,
        f"namespace_id {made.namespace_id}\nqueue_id     {made.queue_id}\n"
        f"token_id     {made.token_id}\ntoken        {made.token}   (shown once: keep it secret)",
    )


@click.group()
def queue() -> None:
    """Manage queues."""


@queue.command("create")
@database_option
@click.option("--namespace-id", required=True, help="Namespace that owns the queue.")
@click.option("--name", required=True, help="Queue name, unique in the namespace.")
@json_option
def queue_create(database: str, namespace_id: str, name: str, as_json: bool) -> None:
    """Create a queue in a namespace."""
    queue_id = with_database(database, lambda db: _admin(db).create_queue(namespace_id, name))
    emit({"queue_id": queue_id}, as_json, f"queue_id {queue_id}")


@click.group()
def token() -> None:
    """Manage API tokens."""


@token.command("create")
@database_option
@click.option("--namespace-id", required=True, help="Namespace the token acts in.")
@click.option(
    "--permission",
    "permissions",
    multiple=True,
    required=True,
    type=PERMISSIONS,
    help="Permission to grant; repeat for several.",
)
@click.option(
    "--queue-id",
    "queue_ids",
    multiple=True,
    required=True,
    help="Queue the token may use; repeat for several.",
)
@click.option("--expires-at", default=None, help="RFC 3339 expiry, e.g. 2027-01-01T00:00:00Z.")
@click.option("--name", default=None, help="Label of the token, shown as the audit log's actor.")
@json_option
def token_create(
    database: str,
    namespace_id: str,
    permissions: tuple[str, ...],
    queue_ids: tuple[str, ...],
    expires_at: str | None,
    name: str | None,
    as_json: bool,
) -> None:
    """Issue a token; the secret is shown once and only its hash is stored."""
    expiry = parse_expiry(expires_at)
    granted = [Permission(p) for p in permissions]
    issued = with_database(
        database,
        lambda db: _admin(db).create_token(namespace_id, granted, queue_ids, expiry, name),
    )
    emit(
        {"token_id": issued.token_id, "token": issued.token},
        as_json,
        f"token_id {issued.token_id}\ntoken    {issued.token}   (shown once: keep it secret)",
    )


@token.command("revoke")
@database_option
@click.option("--token-id", required=True, help="ID printed by `token create` or `init`.")
@json_option
def token_revoke(database: str, token_id: str, as_json: bool) -> None:
    """Revoke a token at once; requests with it then get 401."""
    with_database(database, lambda db: _admin(db).revoke_token(token_id))
    emit({"token_id": token_id, "revoked": True}, as_json, f"token {token_id} revoked")
