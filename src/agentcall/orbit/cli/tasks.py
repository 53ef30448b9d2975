"""`orbit tasks submit|get|list|cancel`: the SDK on the command line (ORBIT_URL, ORBIT_TOKEN);
retry, resolve and batch are added by `agentcall.orbit.cli.task_control`."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from agentcall.orbit.cli.common import fail, json_option
from agentcall.orbit.cli.table import table
from agentcall.orbit.domain.errors import OrbitError
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.times import format_time, parse_time
from agentcall.orbit.sdk.client import (
    TASK_STATES,
    APIError,
    CancelTaskRequest,
    Client,
    ListTasksRequest,
    OrbitClientError,
    RetryPolicy,
    SubmitTaskRequest,
    TaskSummary,
)
from agentcall.orbit.sdk.client._calls import loads
from agentcall.orbit.sdk.settings import ENV_TOKEN, ENV_URL, client_settings

T = TypeVar("T")


def _call(url: str | None, token: str | None, action: Callable[[Client], T]) -> T:
    try:
        settings = client_settings(url, token)
        with Client(settings.url, settings.token, origin="cli") as client:
            return action(client)
    except (OrbitClientError, OrbitError) as exc:
        fail(str(exc))
    except ValueError as exc:  # an argument the SDK refuses before any request, e.g. an id
        fail(str(exc))


def call_with_hints(
    url: str | None,
    token: str | None,
    action: Callable[[Client], T],
    hints: Mapping[type[APIError], str],
) -> T:
    """`action` through the SDK; an API refusal of a kind in `hints` is one line that also
    says what to do."""

    def hinted(client: Client) -> T:
        try:
            return action(client)
        except APIError as exc:
            hint = hints.get(type(exc))
            if hint is None:
                raise
            fail(f"{exc}; {hint}")

    return _call(url, token, hinted)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _task_json(task: TaskSummary) -> dict[str, Any]:
    data: dict[str, Any] = _plain(dataclasses.asdict(task))
    data["revision"] = str(task.revision)
    return data


def _echo_json(value: Any) -> None:
    click.echo(dumps(value))


def connection(fn: Callable[..., None]) -> Callable[..., None]:
    fn = click.option("--token", envvar=ENV_TOKEN, help=f"API token; env {ENV_TOKEN}.")(fn)
    return click.option("--url", envvar=ENV_URL, help=f"API base URL; env {ENV_URL}.")(fn)


def _key(key: str | None) -> str:
    if key is None:
        key = f"cli-{secrets.token_hex(12)}"
        click.echo(
            f"idempotency key: {key} (resend with --key {key} if the outcome is unknown)", err=True
        )
    return key


def _payload(text: str) -> Any:
    raw = Path(text[1:]).read_bytes() if text.startswith("@") else text.encode()
    try:
        return loads(raw)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}") from None


def _time(value: str | None, name: str) -> datetime | None:
    try:
        return None if value is None else parse_time(value, name)
    except OrbitError as exc:
        raise click.BadParameter(exc.message) from None


@click.group()
def tasks() -> None:
    """Submit, read, list, wait for, cancel, retry, resolve and batch-submit tasks through
    the API (ORBIT_URL, ORBIT_TOKEN). `orbit task` is the same group."""


@tasks.command("submit")
@connection
@click.option("--queue-id", required=True)
@click.option("--handler", required=True)
@click.option("--handler-version", required=True)
@click.option("--payload-version", required=True)
@click.option("--payload", required=True, help="JSON text, or @FILE to read it from a file.")
@click.option("--business-key")
@click.option("--available-at", help="RFC 3339 time; default: acceptance time.")
@click.option("--start-deadline-at", help="RFC 3339 time.")
@click.option("--task-timeout-ms", type=click.IntRange(0))
@click.option("--recovery-safety", type=click.Choice(["RECONCILE_ONLY", "IDEMPOTENT"]))
@click.option("--max-attempts", type=click.IntRange(0))
@click.option("--key", help="Idempotency key; generated and printed when omitted.")
@json_option
def submit(
    url: str | None, token: str | None, key: str | None, as_json: bool, **fields: Any
) -> None:
    """Submit a task (201 new, 200 replay of the same key and content)."""
    attempts = fields.pop("max_attempts")
    request = SubmitTaskRequest(
        payload=_payload(fields.pop("payload")),
        available_at=_time(fields.pop("available_at"), "--available-at"),
        start_deadline_at=_time(fields.pop("start_deadline_at"), "--start-deadline-at"),
        retry=None if attempts is None else RetryPolicy(max_attempts=attempts),
        **fields,
    )
    idem = _key(key)
    receipt = _call(url, token, lambda c: c.submit_task(idem, request))
    if as_json:
        _echo_json({"deduplicated": receipt.deduplicated, "task": _task_json(receipt.task)})
    else:
        replay = " (replay of the first submit)" if receipt.deduplicated else ""
        click.echo(
            f"task {receipt.task.id} {receipt.task.state} revision {receipt.task.revision}{replay}"
        )


@tasks.command("get")
@connection
@click.argument("task_id")
@json_option
def get(url: str | None, token: str | None, task_id: str, as_json: bool) -> None:
    """Show one task with its payload."""
    task = _call(url, token, lambda c: c.get_task(task_id))
    if as_json:
        _echo_json(_task_json(task))
    else:
        for name, value in _task_json(task).items():
            click.echo(f"{name:20} {dumps(value) if isinstance(value, dict | list) else value}")


def _rfc3339(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """An RFC 3339 UTC time, e.g. 2026-01-31T00:00:00Z, as the API reads it."""
    if value is None:
        return None
    try:
        return parse_time(value, param.name or "time")
    except OrbitError as exc:
        raise click.BadParameter(exc.message) from None


Decorator = Callable[[Callable[..., None]], Callable[..., None]]


def _time_option(name: str, text: str) -> Decorator:
    return click.option(name, callback=_rfc3339, metavar="RFC3339", help=text)


def _search_options(command: Callable[..., None]) -> Callable[..., None]:
    """The search filter of `orbit task list` (docs/orbit/search.md), as GET /v1/tasks names it."""
    options: list[Decorator] = [
        click.option("--handler", help="Exact handler name."),
        click.option("--handler-version", help="Exact version (needs --handler)."),
        click.option("--business-key", help="Exact business key."),
        click.option("--business-key-prefix", help="Business keys starting with this."),
        click.option("--error-code", help="Exact error code."),
        _time_option("--created-from", "Created at or after (UTC)."),
        _time_option("--created-before", "Created before (UTC)."),
        _time_option("--completed-from", "Completed at or after (UTC)."),
        _time_option("--completed-before", "Completed before (UTC)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@tasks.command("list")
@connection
@click.option("--queue-id", required=True)
@click.option("--state", type=click.Choice(TASK_STATES))
@_search_options
@click.option("--limit", type=click.IntRange(1, 100))
@click.option("--cursor")
@click.option("--all", "every", is_flag=True, help="Follow next_cursor to the end.")
@json_option
def list_(
    url: str | None,
    token: str | None,
    queue_id: str,
    state: str | None,
    limit: int | None,
    cursor: str | None,
    every: bool,
    as_json: bool,
    **search: Any,
) -> None:
    """List task summaries, newest first, narrowed by the search filter."""
    request = ListTasksRequest(queue_id, state, limit, cursor, **search)
    if every:
        items = _call(url, token, lambda c: list(c.iter_tasks(request)))
        next_cursor = None
    else:
        page = _call(url, token, lambda c: c.list_tasks(request))
        items, next_cursor = page.items, page.next_cursor
    if as_json:
        data: dict[str, Any] = {"items": [_task_json(item) for item in items]}
        if next_cursor:
            data["next_cursor"] = next_cursor
        _echo_json(data)
        return
    click.echo(
        table(
            ["TASK", "STATE", "REV", "HANDLER", "ATTEMPTS", "CREATED"],
            [
                [
                    item.id,
                    item.state,
                    item.revision,
                    f"{item.handler}@{item.handler_version}",
                    item.attempt_count,
                    format_time(item.created_at),
                ]
                for item in items
            ],
        )
    )
    if next_cursor:
        click.echo(f"more: --cursor {next_cursor}")


@tasks.command("cancel")
@connection
@click.argument("task_id")
@click.option("--expected-revision", required=True, type=click.IntRange(1))
@click.option("--reason", required=True)
@click.option("--key", help="Idempotency key; generated and printed when omitted.")
@json_option
def cancel(
    url: str | None,
    token: str | None,
    task_id: str,
    expected_revision: int,
    reason: str,
    key: str | None,
    as_json: bool,
) -> None:
    """Cancel a task at the expected revision: WAITING/LEASED at once, RUNNING by asking its
    worker to stop (the task then ends CANCELLED, or NEEDS_REVIEW if unconfirmed)."""
    idem = _key(key)
    request = CancelTaskRequest(expected_revision, reason)
    receipt = _call(url, token, lambda c: c.cancel_task(task_id, idem, request))
    if as_json:
        _echo_json({"deduplicated": receipt.deduplicated, "task": _task_json(receipt.task)})
    else:
        click.echo(f"task {receipt.task.id} {receipt.task.state} revision {receipt.task.revision}")
