"""`orbit idempotency cleanup`: remove idempotency records past their 90-day retention."""

from __future__ import annotations

import click

from agentcall.orbit.cli.common import database_option, emit, json_option, with_database
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.store.retention import cleanup


@click.group()
def idempotency() -> None:
    """Maintain idempotency records."""


@idempotency.command("cleanup")
@database_option
@click.option("--dry-run", is_flag=True, help="Only count the records that would be removed.")
@json_option
def idempotency_cleanup(database: str, dry_run: bool, as_json: bool) -> None:
    """Remove records whose 90-day retention has passed by the database clock (never earlier).
    Safe to run at any time, e.g. daily from cron; deletes in small batches."""
    report = with_database(database, lambda db: cleanup(db, dry_run=dry_run))
    verb = "would remove" if dry_run else "removed"
    emit(
        {
            "removed": report.removed,
            "dry_run": report.dry_run,
            "now": format_time(report.now),
            "cutoff": format_time(report.cutoff),
        },
        as_json,
        f"{verb} {report.removed} idempotency records created at or before "
        f"{format_time(report.cutoff)}",
    )
