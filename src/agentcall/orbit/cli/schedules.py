"""`orbit schedules create|list|show|pause|resume|trigger|backfill|delete`: the SDK's
`client.schedules` on the command line (ORBIT_URL, ORBIT_TOKEN; docs/orbit/schedules.md). Only
HTTP: these commands work from the base install. Every command prints a readable line or
table, or JSON with `--json`."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from agentcall.orbit.cli.common import json_option
from agentcall.orbit.cli.schedules_show import (
    firing_json,
    firings_table,
    schedule_json,
    schedule_line,
    schedules_table,
    show_schedule,
)
from agentcall.orbit.cli.tasks import _echo_json, _key, _payload, _time, call_with_hints, connection
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.sdk.client import (
    OVERLAP_POLICIES,
    SCHEDULE_STATES,
    APIError,
    Client,
    CreateScheduleRequest,
    IdempotencyConflictError,
    NotFoundError,
    PermissionDeniedError,
    RetryPolicy,
    ScheduleSpec,
    StateConflictError,
    TaskTemplate,
)

__all__ = ["schedules", "parse_every"]
T = TypeVar("T")
_EVERY = re.compile(r"([1-9][0-9]*)(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

_HINTS: dict[type[APIError], str] = {
    PermissionDeniedError: "the token needs schedules:read to read and schedules:write to change "
    "schedules, with the schedule's queue in its scope (orbit token create --permission "
    "schedules:write --queue QUEUE_ID)",
    NotFoundError: "`orbit schedules list` shows the schedules this token can see",
    StateConflictError: "the schedule changed meanwhile: see its revision with `orbit schedules "
    "show ID`, or leave out --expected-revision to act at the current one",
    IdempotencyConflictError: "this --key was used for another request: use a new key",
}


def _call(url: str | None, token: str | None, action: Callable[[Client], T]) -> T:
    return call_with_hints(url, token, action, _HINTS)


def parse_every(text: str) -> int:
    """`90s`, `5m`, `1h`, `1d` (or `1500ms`) as milliseconds."""
    found = _EVERY.fullmatch(text.strip())
    if found is None:
        raise click.BadParameter(
            f"{text!r} is not a duration: write a whole number with a unit, e.g. 30s, 5m, 1h, 1d",
            param_hint="--every",
        )
    return int(found.group(1)) * _UNIT_MS[found.group(2)]


def _spec(cron: str | None, every: str | None, zone: str | None, anchor: str | None) -> Any:
    if (cron is None) == (every is None):
        raise click.UsageError(
            "give exactly one of --cron 'MINUTE HOUR DAY MONTH WEEKDAY' (e.g. --cron '30 2 * * *')"
            " or --every DURATION (e.g. --every 5m)"
        )
    if cron is not None:
        if anchor is not None:
            raise click.UsageError("--anchor-at goes with --every; a cron has no anchor")
        return ScheduleSpec.of_cron(cron, zone)
    if zone is not None:
        raise click.UsageError("--time-zone goes with --cron; an interval counts plain seconds")
    return ScheduleSpec.of_interval(parse_every(str(every)), _time(anchor, "--anchor-at"))


def _revision(client: Client, schedule_id: str, given: int | None) -> int:
    """The revision to act at: the one given, else the schedule's current one."""
    return given if given is not None else client.schedules.get(schedule_id).revision


revision_option = click.option(
    "--expected-revision",
    type=click.IntRange(1),
    help="Act only at this revision (see `orbit schedules show`); default: the current one.",
)


@click.group()
def schedules() -> None:
    """Create, list, show, pause, resume, trigger, backfill and delete schedules: tasks
    submitted on a cron or a fixed interval, exactly once per slot (ORBIT_URL, ORBIT_TOKEN;
    schedules:read, schedules:write)."""


@schedules.command("create")
@connection
@click.option("--queue-id", required=True, help="The queue of the tasks it submits.")
@click.option("--handler", required=True)
@click.option("--handler-version", required=True)
@click.option("--payload-version", required=True)
@click.option("--payload", default="{}", help="JSON text, or @FILE to read it from a file.")
@click.option("--cron", help="5 fields: MINUTE HOUR DAY-OF-MONTH MONTH DAY-OF-WEEK.")
@click.option("--time-zone", help="IANA zone of --cron, e.g. Europe/Berlin [default: UTC].")
@click.option("--every", help="A fixed interval instead of --cron: 30s, 5m, 1h, 1d.")
@click.option("--anchor-at", help="RFC 3339 time a slot of --every falls on [default: now].")
@click.option("--start-at", help="RFC 3339 time: no slot before it.")
@click.option("--end-at", help="RFC 3339 time: no slot at or after it.")
@click.option("--jitter-ms", type=click.IntRange(0, 3_600_000), help="Delay each submit 0-N ms.")
@click.option(
    "--catchup-window-ms",
    type=click.IntRange(1000, 604_800_000),
    help="Slots found late by more are recorded missed [default: 300000].",
)
@click.option("--overlap", type=click.Choice(OVERLAP_POLICIES), help="[default: skip]")
@click.option("--paused", is_flag=True, help="Create it paused (resume it later).")
@click.option("--note", help="Why it exists or is paused (up to 1024 characters).")
@click.option("--task-timeout-ms", type=click.IntRange(0))
@click.option("--recovery-safety", type=click.Choice(["RECONCILE_ONLY", "IDEMPOTENT"]))
@click.option("--max-attempts", type=click.IntRange(0))
@click.option("--key", help="Idempotency key; generated and printed when omitted.")
@json_option
def create(
    url: str | None, token: str | None, key: str | None, as_json: bool, **fields: Any
) -> None:
    """Create a schedule; each slot submits one task with the key schedule:<id>:<slot>."""
    spec = _spec(fields["cron"], fields["every"], fields["time_zone"], fields["anchor_at"])
    attempts = fields["max_attempts"]
    template = TaskTemplate(
        fields["queue_id"],
        fields["handler"],
        fields["handler_version"],
        fields["payload_version"],
        _payload(fields["payload"]),
        fields["task_timeout_ms"],
        fields["recovery_safety"],
        None if attempts is None else RetryPolicy(max_attempts=attempts),
    )
    request = CreateScheduleRequest(
        template,
        spec,
        start_at=_time(fields["start_at"], "--start-at"),
        end_at=_time(fields["end_at"], "--end-at"),
        jitter_ms=fields["jitter_ms"],
        catchup_window_ms=fields["catchup_window_ms"],
        overlap=fields["overlap"],
        state="paused" if fields["paused"] else None,
        note=fields["note"],
    )
    idem = _key(key)
    receipt = _call(url, token, lambda c: c.schedules.create(idem, request))
    if as_json:
        _echo_json({"deduplicated": receipt.deduplicated, **schedule_json(receipt.schedule)})
        return
    replay = " (replay of the first create)" if receipt.deduplicated else ""
    click.echo(schedule_line(receipt.schedule) + replay)


@schedules.command("list")
@connection
@click.option("--queue-id", help="Only the schedules of this queue.")
@click.option("--state", type=click.Choice(SCHEDULE_STATES))
@click.option("--limit", type=click.IntRange(1, 100))
@click.option("--cursor")
@click.option("--all", "every", is_flag=True, help="Follow next_cursor to the end.")
@json_option
def list_(
    url: str | None,
    token: str | None,
    queue_id: str | None,
    state: str | None,
    limit: int | None,
    cursor: str | None,
    every: bool,
    as_json: bool,
) -> None:
    """List schedules with their next slot and last outcome."""
    if every:
        items = _call(url, token, lambda c: list(c.schedules.iter(queue_id, state)))
        next_cursor = None
    else:
        page = _call(url, token, lambda c: c.schedules.list(queue_id, state, limit, cursor))
        items, next_cursor = page.items, page.next_cursor
    if as_json:
        data: dict[str, Any] = {"items": [schedule_json(item) for item in items]}
        _echo_json(data | ({"next_cursor": next_cursor} if next_cursor else {}))
        return
    click.echo(schedules_table(items))
    if next_cursor:
        click.echo(f"more: --cursor {next_cursor}")


@schedules.command("show")
@connection
@click.argument("schedule_id")
@click.option("--next", "count", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--firings", "limit", type=click.IntRange(1, 100), default=10, show_default=True)
@json_option
def show(
    url: str | None, token: str | None, schedule_id: str, count: int, limit: int, as_json: bool
) -> None:
    """Show a schedule, its next nominal times and its recent firings."""

    def read(client: Client) -> tuple[Any, list[datetime], list[Any]]:
        schedule = client.schedules.get(schedule_id)
        times = client.schedules.next_times(schedule_id, count)
        return schedule, times, client.schedules.firings(schedule_id, limit)

    schedule, times, firings = _call(url, token, read)
    show_schedule(schedule, times, firings, as_json)


def _state_command(action: str, summary: str) -> click.Command:
    @connection
    @click.argument("schedule_id")
    @revision_option
    @click.option("--note", help="Why (replaces the schedule's note).")
    @json_option
    def command(
        url: str | None,
        token: str | None,
        schedule_id: str,
        expected_revision: int | None,
        note: str | None,
        as_json: bool,
    ) -> None:
        def act(client: Client) -> Any:
            revision = _revision(client, schedule_id, expected_revision)
            change = client.schedules.pause if action == "pause" else client.schedules.resume
            return change(schedule_id, revision, note)

        schedule = _call(url, token, act)
        if as_json:
            _echo_json(schedule_json(schedule))
        else:
            click.echo(schedule_line(schedule))

    command.__doc__ = summary
    return schedules.command(action)(command)


_state_command("pause", "Stop firing (slots passed while paused are not caught up).")
_state_command("resume", "Fire again from the first slot after now.")


@schedules.command("trigger")
@connection
@click.argument("schedule_id")
@click.option("--key", help="Idempotency key; generated and printed when omitted.")
@json_option
def trigger(
    url: str | None, token: str | None, schedule_id: str, key: str | None, as_json: bool
) -> None:
    """Fire once now, paused or not, beside the nominal slots."""
    idem = _key(key)
    receipt = _call(url, token, lambda c: c.schedules.trigger(schedule_id, idem))
    firing = receipt.firing
    if as_json:
        _echo_json({"deduplicated": receipt.deduplicated, "firing": firing_json(firing)})
        return
    replay = " (replay: the same task)" if receipt.deduplicated else ""
    click.echo(f"firing {firing.id} {firing.outcome} task {firing.task_id}{replay}")


@schedules.command("backfill")
@connection
@click.argument("schedule_id")
@click.option("--from", "start", required=True, help="RFC 3339 time: the first slot at or after.")
@click.option("--to", "end", required=True, help="RFC 3339 time, not after now: slots before.")
@click.option("--preview", is_flag=True, help="List the slots only; fire nothing.")
@json_option
def backfill(
    url: str | None,
    token: str | None,
    schedule_id: str,
    start: str,
    end: str,
    preview: bool,
    as_json: bool,
) -> None:
    """Fire the slots of a past range [--from, --to) (at most 1000); a slot that fired
    already is not fired again. --preview lists them first."""
    first, last = _time(start, "--from"), _time(end, "--to")
    assert first is not None and last is not None
    run = (
        (lambda c: c.schedules.preview_backfill(schedule_id, first, last))
        if preview
        else (lambda c: c.schedules.backfill(schedule_id, first, last))
    )
    result = _call(url, token, run)
    if as_json:
        _echo_json(
            {
                "slots": [format_time(slot) for slot in result.slots],
                "firings": [firing_json(f) for f in result.firings],
            }
        )
        return
    if preview:
        click.echo(f"{len(result.slots)} slots would fire (preview; nothing fired):")
        for slot in result.slots:
            click.echo(f"  {format_time(slot)}")
        return
    fired = sum(1 for f in result.firings if not f.deduplicated)
    click.echo(
        f"{len(result.slots)} slots: {fired} fired, {len(result.slots) - fired} had fired already"
    )
    click.echo(firings_table(result.firings))


@schedules.command("delete")
@connection
@click.argument("schedule_id")
@revision_option
@json_option
def delete(
    url: str | None,
    token: str | None,
    schedule_id: str,
    expected_revision: int | None,
    as_json: bool,
) -> None:
    """Delete a schedule and its firing records; the tasks it submitted stay."""
    _call(url, token, lambda c: c.schedules.delete(schedule_id, expected_revision))
    if as_json:
        _echo_json({"id": schedule_id, "deleted": True})
    else:
        click.echo(f"schedule {schedule_id} deleted")
