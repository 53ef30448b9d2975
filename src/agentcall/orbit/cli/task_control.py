"""`orbit tasks retry|resolve|batch|wait` (docs/orbit/task-control.md): the task control
operations of the SDK on the command line, and `show` (the same command as `get`).
They join the `tasks` group of `agentcall.orbit.cli.tasks`; `agentcall.orbit.cli.COMMANDS` points
`tasks` (and its alias `task`) here so that the group is complete when it is used. Only HTTP: these
commands work from the base install."""

from __future__ import annotations

import copy
import sys
from typing import Any

import click

from agentcall.orbit.cli.common import json_option
from agentcall.orbit.cli.tasks import (
    _call,
    _echo_json,
    _key,
    _payload,
    _task_json,
    _time,
    connection,
    tasks,
)
from agentcall.orbit.sdk.client import (
    SETTLED_STATES,
    ResolveTaskRequest,
    RetryPolicy,
    RetryTaskRequest,
    SubmitTaskRequest,
    TaskReceipt,
)

__all__ = ["tasks"]
_SUBMIT_FIELDS = frozenset(SubmitTaskRequest.__dataclass_fields__)


def _show(receipt: TaskReceipt, as_json: bool) -> None:
    if as_json:
        _echo_json({"deduplicated": receipt.deduplicated, "task": _task_json(receipt.task)})
        return
    replay = " (replay of the first request)" if receipt.deduplicated else ""
    click.echo(
        f"task {receipt.task.id} {receipt.task.state} revision {receipt.task.revision}{replay}"
    )


@tasks.command("retry")
@connection
@click.argument("task_id")
@click.option("--expected-revision", required=True, type=click.IntRange(1))
@click.option("--reason", required=True, help="Why it is retried (kept in the task's events).")
@click.option("--key", help="Idempotency key; generated and printed when omitted.")
@json_option
def retry(
    url: str | None,
    token: str | None,
    task_id: str,
    expected_revision: int,
    reason: str,
    key: str | None,
    as_json: bool,
) -> None:
    """Run a FAILED or NEEDS_REVIEW task once more (one more attempt; tasks:review)."""
    idem = _key(key)
    request = RetryTaskRequest(expected_revision, reason)
    _show(_call(url, token, lambda c: c.retry_task(task_id, idem, request)), as_json)


@tasks.command("resolve")
@connection
@click.argument("task_id")
@click.option("--expected-revision", required=True, type=click.IntRange(1))
@click.option("--outcome", required=True, type=click.Choice(["succeeded", "failed"]))
@click.option("--reason", required=True, help="What the operator checked.")
@click.option("--result", help="JSON result (outcome succeeded), or @FILE.")
@click.option("--error-code", help="Error code (outcome failed), 1-32 of [A-Za-z0-9_.:-].")
@click.option("--error-message", help="Error message (outcome failed).")
@click.option("--evidence", help="JSON array of evidence items, or @FILE.")
@click.option("--key", help="Idempotency key; generated and printed when omitted.")
@json_option
def resolve(
    url: str | None,
    token: str | None,
    task_id: str,
    expected_revision: int,
    outcome: str,
    reason: str,
    result: str | None,
    error_code: str | None,
    error_message: str | None,
    evidence: str | None,
    key: str | None,
    as_json: bool,
) -> None:
    """Settle a NEEDS_REVIEW task as succeeded (with --result) or failed (with --error-code
    and --error-message), recording the operator's evidence (tasks:review)."""
    if (outcome == "succeeded") != (result is not None):
        raise click.UsageError("--result goes with --outcome succeeded, and only with it")
    if outcome == "failed" and (error_code is None or error_message is None):
        raise click.UsageError("--outcome failed needs --error-code and --error-message")
    items = [] if evidence is None else _payload(evidence)
    if not isinstance(items, list):
        raise click.BadParameter("must be a JSON array of evidence items", param_hint="--evidence")
    request = ResolveTaskRequest(
        expected_revision,
        "succeeded" if outcome == "succeeded" else "failed",
        reason,
        result=None if result is None else _payload(result),
        error_code=error_code,
        error_message=error_message,
        evidence=items,
    )
    idem = _key(key)
    _show(_call(url, token, lambda c: c.resolve_task(task_id, idem, request)), as_json)


@tasks.command("batch")
@connection
@click.option(
    "--file",
    "source",
    required=True,
    help='File with a JSON array of 1-100 submit bodies (or {"tasks": [...]}); '
    "'-' reads standard input.",
)
@click.option("--key", help="Idempotency key of the whole batch; generated when omitted.")
@json_option
def batch(url: str | None, token: str | None, source: str, key: str | None, as_json: bool) -> None:
    """Submit 1-100 tasks at once: all are accepted or none."""
    document = _payload(sys.stdin.read() if source == "-" else "@" + source.removeprefix("@"))
    bodies = document.get("tasks") if isinstance(document, dict) else document
    if not isinstance(bodies, list):
        raise click.BadParameter("must hold a JSON array of submit bodies", param_hint="--file")
    requests = [_submit_request(body, index) for index, body in enumerate(bodies)]
    idem = _key(key)
    receipt = _call(url, token, lambda c: c.submit_batch(idem, requests))
    if as_json:
        _echo_json(
            {
                "deduplicated": receipt.deduplicated,
                "items": [
                    {
                        "index": i.index,
                        "task_id": i.task_id,
                        "state": i.state,
                        "revision": str(i.revision),
                    }
                    for i in receipt.items
                ],
            }
        )
        return
    for item in receipt.items:
        click.echo(f"{item.index:3} task {item.task_id} {item.state} revision {item.revision}")
    if receipt.deduplicated:
        click.echo("(replay of the first batch)")


def _submit_request(body: Any, index: int) -> SubmitTaskRequest:
    where = f"--file tasks[{index}]"
    if not isinstance(body, dict) or not set(body) <= _SUBMIT_FIELDS:
        raise click.BadParameter(
            f"must be a submit body with fields {sorted(_SUBMIT_FIELDS)}", param_hint=where
        )
    fields = dict(body)
    for name in ("available_at", "start_deadline_at"):
        if fields.get(name) is not None:
            fields[name] = _time(str(fields[name]), f"{where}.{name}")
    if isinstance(fields.get("retry"), dict):
        fields["retry"] = RetryPolicy(**fields["retry"])
    try:
        return SubmitTaskRequest(**fields)
    except TypeError as exc:
        raise click.BadParameter(str(exc), param_hint=where) from None


@tasks.command("wait")
@connection
@click.argument("task_id")
@click.option(
    "--timeout",
    default=60.0,
    show_default=True,
    type=click.FloatRange(0, 86_400),
    help="Seconds to wait for the task to settle.",
)
@json_option
def wait(url: str | None, token: str | None, task_id: str, timeout: float, as_json: bool) -> None:
    """Wait until the task is SUCCEEDED, FAILED, CANCELLED or NEEDS_REVIEW (exit 0), or the
    timeout runs out (exit 2); prints the task."""
    found = _call(url, token, lambda c: c.wait(task_id, timeout=timeout))
    if as_json:
        _echo_json(_task_json(found))
    else:
        click.echo(f"task {found.id} {found.state} revision {found.revision}")
    if found.state not in SETTLED_STATES:
        raise SystemExit(2)


_show_command = copy.copy(tasks.commands["get"])  # `orbit tasks show ID`: the same as `get`
_show_command.short_help = "Show one task with its payload (the same as get)."
tasks.add_command(_show_command, "show")
