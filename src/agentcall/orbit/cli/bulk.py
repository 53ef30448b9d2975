"""`orbit bulk preview|start|show|list|cancel` (through the API, docs/orbit/bulk.md): one
action (cancel, retry, resolve) on every task a search filter matches. `preview` counts and
samples the tasks; `start` records them and returns at once, or with `--wait` shows a progress
bar until the operation ends (exit status 1 unless it SUCCEEDED); `show` is one operation's
progress (its SKIPPED or FAILED tasks with `--tasks`). Readable text, or JSON with `--json`."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from agentcall.orbit.cli.common import json_option
from agentcall.orbit.cli.table import table
from agentcall.orbit.cli.tasks import (
    _echo_json,
    _key,
    _payload,
    _plain,
    _task_json,
    _time,
    call_with_hints,
    connection,
)
from agentcall.orbit.sdk.client import (
    BULK_ACTIONS,
    BULK_OUTCOMES,
    TASK_STATES,
    APIError,
    BulkFilter,
    BulkOperation,
    BulkRequest,
    Client,
    NotFoundError,
    PermissionDeniedError,
)

__all__ = ["bulk"]
T = TypeVar("T")
POLL_S = 0.5
_HINTS: dict[type[APIError], str] = {
    PermissionDeniedError: "cancel needs tasks:cancel, retry and resolve need tasks:review "
    "(besides tasks:read), with the queue in the token's scope",
    NotFoundError: "`orbit bulk list` shows the operations this token can see",
}
_FILTER_TIMES = ("created_from", "created_before", "completed_from", "completed_before")


def _call(url: str | None, token: str | None, action: Callable[[Client], T]) -> T:
    return call_with_hints(url, token, action, _HINTS)


def _filter_options(fn: Callable[..., None]) -> Callable[..., None]:
    for name in reversed(_FILTER_TIMES):
        flag = "--" + name.replace("_", "-")
        fn = click.option(flag, name, help="RFC 3339 time (from: inclusive, before: exclusive).")(
            fn
        )
    for flag in ("--error-code", "--business-key-prefix", "--business-key", "--handler-version"):
        fn = click.option(flag)(fn)
    fn = click.option("--handler")(fn)
    fn = click.option("--state", type=click.Choice(TASK_STATES))(fn)
    return click.option("--queue-id", required=True)(fn)


def _action_options(fn: Callable[..., None]) -> Callable[..., None]:
    fn = click.option("--fail-message", help="resolve --outcome failed: the error message.")(fn)
    fn = click.option("--fail-code", help="resolve --outcome failed: the error code.")(fn)
    fn = click.option("--result", help="resolve --outcome succeeded: JSON, or @file.")(fn)
    fn = click.option("--outcome", type=click.Choice(["succeeded", "failed"]))(fn)
    fn = click.option("--reason", required=True, help="Why (recorded on every task).")(fn)
    return click.option("--action", required=True, type=click.Choice(BULK_ACTIONS))(fn)


def _request(options: dict[str, Any]) -> BulkRequest:
    """The request from the filter and action options (the API checks the combination)."""
    fields = {f.name for f in dataclasses.fields(BulkFilter)}
    given = {k: v for k, v in options.items() if k in fields and v is not None}
    for name in _FILTER_TIMES:
        if name in given:
            given[name] = _time(given[name], "--" + name.replace("_", "-"))
    error = None
    if options["fail_code"] is not None or options["fail_message"] is not None:
        error = {"code": options["fail_code"] or "", "message": options["fail_message"] or ""}
    result = None if options["result"] is None else _payload(options["result"])
    return BulkRequest(
        BulkFilter(**given), options["action"], options["reason"], options["outcome"], result, error
    )


def operation_json(op: BulkOperation) -> dict[str, Any]:
    data: dict[str, Any] = _plain(dataclasses.asdict(op))
    data["filter"] = op.filter.to_json()
    data["params"] = op.params
    data["finished_at"] = data.get("finished_at")
    data["error"] = op.error
    return data


def _progress_line(op: BulkOperation) -> str:
    return (
        f"bulk {op.action} {op.id} {op.state}: {op.reached}/{op.matched} "
        f"(done {op.done}, skipped {op.skipped}, failed {op.failed})"
    )


def _echo(op: BulkOperation, as_json: bool) -> None:
    if as_json:
        _echo_json(operation_json(op))
        return
    click.echo(_progress_line(op))
    if op.error:
        click.echo(f"stopped: {op.error}")


def _wait(url: str | None, token: str | None, op: BulkOperation, bar: bool) -> BulkOperation:
    """Poll until the operation ends; a progress bar on stderr unless `bar` is False."""
    operation_id = op.id

    def again() -> BulkOperation:
        time.sleep(POLL_S)
        return _call(url, token, lambda c: c.bulk.get(operation_id))

    if not bar:
        while not op.finished:
            op = again()
        return op
    label = f"bulk {op.action} {op.id}"
    with click.progressbar(length=max(op.matched, 1), label=label, file=sys.stderr) as progress:
        shown = 0
        while True:
            progress.update(op.reached - shown)
            shown = op.reached
            if op.finished:
                return op
            op = again()


def _finish(url: str | None, token: str | None, op: BulkOperation, wait: bool, js: bool) -> None:
    if wait:
        op = _wait(url, token, op, bar=not js)
    _echo(op, js)
    if wait and op.state != "SUCCEEDED":
        sys.exit(1)


@click.group()
def bulk() -> None:
    """Act on every task a search filter matches (cancel, retry, resolve) as a tracked
    operation, through the API (ORBIT_URL, ORBIT_TOKEN)."""


@bulk.command("preview")
@connection
@_filter_options
@_action_options
@json_option
def preview(url: str | None, token: str | None, as_json: bool, **options: Any) -> None:
    """How many tasks the filter matches now and the newest 10 of them; nothing is written."""
    request = _request(options)
    found = _call(url, token, lambda c: c.bulk.preview(request))
    if as_json:
        sample = [_task_json(task) for task in found.sample]
        _echo_json({"matched": found.matched, "more": found.more, "sample": sample})
        return
    more = " (more: narrow the filter)" if found.more else ""
    click.echo(f"{found.matched} tasks match{more}; {request.action} would act on them")
    rows = [[t.id, t.state, t.revision, t.handler] for t in found.sample]
    click.echo(table(["TASK", "STATE", "REV", "HANDLER"], rows))


@bulk.command("start")
@connection
@_filter_options
@_action_options
@click.option("--key", help="Idempotency key; generated and printed when omitted.")
@click.option("--wait", is_flag=True, help="Show the progress until the operation ends.")
@json_option
def start(
    url: str | None, token: str | None, key: str | None, wait: bool, as_json: bool, **options: Any
) -> None:
    """Start the action on every matching task (recorded now, acted on in batches; a task
    that changed since is SKIPPED)."""
    request = _request(options)
    idem = _key(key)
    started = _call(url, token, lambda c: c.bulk.start(idem, request))
    _finish(url, token, started.operation, wait, as_json)


@bulk.command("show")
@connection
@click.argument("operation_id")
@click.option("--wait", is_flag=True, help="Show the progress until the operation ends.")
@click.option("--tasks", "outcome", type=click.Choice(BULK_OUTCOMES), help="List these tasks.")
@json_option
def show(
    url: str | None,
    token: str | None,
    operation_id: str,
    wait: bool,
    outcome: str | None,
    as_json: bool,
) -> None:
    """One operation's progress (done, skipped, failed of matched)."""
    op = _call(url, token, lambda c: c.bulk.get(operation_id))
    if outcome is None:
        _finish(url, token, op, wait, as_json)
        return
    items = _call(url, token, lambda c: list(c.bulk.iter_tasks(operation_id, outcome)))
    if as_json:
        _echo_json({"operation": operation_json(op), "tasks": _plain(list(map(vars_of, items)))})
        return
    click.echo(_progress_line(op))
    rows = [[t.task_id, t.expected_revision, t.outcome, t.message or ""] for t in items]
    click.echo(table(["TASK", "MATCHED REV", "OUTCOME", "MESSAGE"], rows))


def vars_of(item: Any) -> dict[str, Any]:
    return dict(dataclasses.asdict(item))


@bulk.command("list")
@connection
@click.option("--limit", type=click.IntRange(1, 100))
@click.option("--cursor")
@json_option
def list_(
    url: str | None, token: str | None, limit: int | None, cursor: str | None, as_json: bool
) -> None:
    """The bulk operations on the token's queues, newest first."""
    page = _call(url, token, lambda c: c.bulk.list(limit, cursor))
    if as_json:
        data: dict[str, Any] = {"items": [operation_json(op) for op in page.items]}
        if page.next_cursor:
            data["next_cursor"] = page.next_cursor
        _echo_json(data)
        return
    rows = [
        [op.id, op.action, op.state, op.matched, op.done, op.skipped, op.failed]
        for op in page.items
    ]
    click.echo(
        table(["OPERATION", "ACTION", "STATE", "MATCHED", "DONE", "SKIPPED", "FAILED"], rows)
    )
    if page.next_cursor:
        click.echo(f"more: --cursor {page.next_cursor}")


@bulk.command("cancel")
@connection
@click.argument("operation_id")
@json_option
def cancel(url: str | None, token: str | None, operation_id: str, as_json: bool) -> None:
    """Stop a running operation: the batch in flight is finished and recorded, the tasks not
    reached keep no outcome."""
    _echo(_call(url, token, lambda c: c.bulk.cancel(operation_id)), as_json)
