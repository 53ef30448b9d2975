"""How `orbit schedules` prints a schedule and its firings: one line, a table, or JSON shaped
like the API's objects (times in UTC `Z`, the revision as a decimal string)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click

from agentcall.orbit.cli.table import table
from agentcall.orbit.cli.tasks import _echo_json, _plain
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.sdk.client import Firing, Schedule


def schedule_json(schedule: Schedule) -> dict[str, Any]:
    data: dict[str, Any] = _plain(dataclasses.asdict(schedule))
    data["revision"] = str(schedule.revision)
    return data


def firing_json(firing: Firing) -> dict[str, Any]:
    data: dict[str, Any] = _plain(dataclasses.asdict(firing))
    return data


def _when(value: datetime | None) -> str:
    return "" if value is None else format_time(value)


def last_outcome(schedule: Schedule) -> str:
    last = schedule.last_firing
    return "" if last is None else f"{last.outcome} {_when(last.nominal_at)}"


def schedule_line(schedule: Schedule) -> str:
    nxt = _when(schedule.next_fire_at) or "none"
    return (
        f"schedule {schedule.id} {schedule.state} revision {schedule.revision}: "
        f"{schedule.spec.describe()}, next {nxt}"
    )


def schedules_table(items: Sequence[Schedule]) -> str:
    return table(
        ["SCHEDULE", "STATE", "REV", "SPEC", "HANDLER", "NEXT", "LAST"],
        [
            [
                s.id,
                s.state,
                s.revision,
                s.spec.describe(),
                f"{s.template.handler}@{s.template.handler_version}",
                _when(s.next_fire_at),
                last_outcome(s),
            ]
            for s in items
        ],
    )


def firings_table(items: Sequence[Firing]) -> str:
    return table(
        ["NOMINAL", "FIRED", "KIND", "OUTCOME", "TASK", "SLOTS"],
        [
            [
                _when(f.nominal_at),
                _when(f.fired_at),
                f.kind,
                f.outcome + (" (already fired)" if f.deduplicated else ""),
                f.task_id or "",
                f.slots,
            ]
            for f in items
        ],
    )


def show_schedule(
    schedule: Schedule, times: Sequence[datetime], firings: Sequence[Firing], as_json: bool
) -> None:
    if as_json:
        _echo_json(
            {
                "schedule": schedule_json(schedule),
                "next_times": [format_time(t) for t in times],
                "firings": [firing_json(f) for f in firings],
            }
        )
        return
    for name, value in schedule_json(schedule).items():
        if name in ("last_firing", "template", "spec"):
            continue
        click.echo(f"{name:18} {value}")
    click.echo(f"{'spec':18} {schedule.spec.describe()}")
    click.echo(f"{'template':18} {dumps(_plain(dataclasses.asdict(schedule.template)))}")
    click.echo("next times:")
    for when in times:
        click.echo(f"  {format_time(when)}")
    click.echo("recent firings:" if firings else "recent firings: none yet")
    if firings:
        click.echo(firings_table(firings))
