"""`orbit audit list|cleanup` (docs/orbit/audit.md): the namespace's audit log through the API
(ORBIT_URL, ORBIT_TOKEN with `audit:read`), newest first, as a table or JSON; and the
retention sweep on the database (the same 90 days as idempotency records)."""

from __future__ import annotations

import re
from typing import Any

import click

from agentcall.orbit.cli.common import database_option, emit, json_option, with_database
from agentcall.orbit.cli.table import table
from agentcall.orbit.cli.tasks import _call, _echo_json, _time, connection
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.sdk.client import AuditEntry

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@click.group()
def audit() -> None:
    """Read and maintain the audit log: who changed what, when and from where."""


@audit.command("list")
@connection
@click.option("--action", help="Only this action, e.g. tasks.cancel.")
@click.option("--actor", help="Only this token id.")
@click.option("--target", help="Only this target id (a task, token, queue, ...).")
@click.option("--since", help="RFC 3339 time, inclusive.")
@click.option("--until", help="RFC 3339 time, exclusive.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@json_option
def audit_list(
    url: str | None,
    token: str | None,
    action: str | None,
    actor: str | None,
    target: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """The newest entries first (up to --limit), across pages."""
    start, end = _time(since, "--since"), _time(until, "--until")

    def read(client: Any) -> list[AuditEntry]:
        found: list[AuditEntry] = []
        for entry in client.audit.iter(action, actor, target, start, end):
            found.append(entry)
            if len(found) >= limit:
                break
        return found

    entries = _call(url, token, read)
    if as_json:
        _echo_json([entry_json(entry) for entry in entries])
        return
    rows = [
        [
            format_time(e.at),
            e.action,
            f"{e.target_kind}:{e.target_id or '-'}",
            e.actor_name or e.actor_token_id,
            e.origin,
            e.remote_addr,
            e.request_id,
            dumps(e.detail) if e.detail else "",
        ]
        for e in entries
    ]
    headers = ["AT", "ACTION", "TARGET", "ACTOR", "ORIGIN", "FROM", "REQUEST", "DETAIL"]
    click.echo(table(headers, [[_visible(cell) for cell in row] for row in rows]))


@audit.command("cleanup")
@database_option
@click.option("--dry-run", is_flag=True, help="Only count the entries that would be removed.")
@json_option
def audit_cleanup(database: str, dry_run: bool, as_json: bool) -> None:
    """Remove entries older than 90 days by the database clock (never younger ones). Safe to
    run at any time, e.g. daily from cron; deletes in small batches."""
    from agentcall.orbit.store.retention import cleanup_audit

    report = with_database(database, lambda db: cleanup_audit(db, dry_run=dry_run))
    verb = "would remove" if dry_run else "removed"
    emit(
        {
            "removed": report.removed,
            "dry_run": report.dry_run,
            "now": format_time(report.now),
            "cutoff": format_time(report.cutoff),
        },
        as_json,
        f"{verb} {report.removed} audit entries written at or before {format_time(report.cutoff)}",
    )


def entry_json(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "at": format_time(entry.at),
        "actor": {"token_id": entry.actor_token_id, "name": entry.actor_name},
        "action": entry.action,
        "target": {"kind": entry.target_kind, "id": entry.target_id},
        "origin": entry.origin,
        "remote_addr": entry.remote_addr,
        "request_id": entry.request_id,
        "detail": entry.detail,
    }


def _visible(value: object) -> str:
    """Control characters as escapes: an entry cannot move the cursor or recolour the
    terminal."""
    text = "" if value is None else str(value)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
