"""`orbit queue show` and `orbit queue set` (through the API, docs/orbit/flow-control.md): a
queue's flow settings, its busiest concurrency keys and its tasks held by each limit; `set`
reads the current settings and revision, changes only the rules it is given (`--clear`:
start from none) and writes them back conditionally. Readable text, or JSON with `--json`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from agentcall.orbit.cli.common import json_option
from agentcall.orbit.cli.inspect_commands import queue
from agentcall.orbit.cli.table import table
from agentcall.orbit.cli.tasks import _echo_json, call_with_hints, connection
from agentcall.orbit.sdk.client import (
    APIError,
    Client,
    NotFoundError,
    PermissionDeniedError,
    QueueFlowInfo,
    StateConflictError,
)

__all__ = ["queue"]
T = TypeVar("T")
_HINTS: dict[type[APIError], str] = {
    PermissionDeniedError: "reading needs tasks:read, changing needs queues:admin, with the "
    "queue in the token's scope (orbit token create --permission queues:admin --queue-id QUEUE_ID)",
    NotFoundError: "`orbit queue list` shows the queues this token can see",
    StateConflictError: "the settings changed meanwhile: run the command again (or leave out "
    "--expected-revision to change the current ones)",
}


def _call(url: str | None, token: str | None, action: Callable[[Client], T]) -> T:
    return call_with_hints(url, token, action, _HINTS)


def info_json(info: QueueFlowInfo) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": info.id,
        "name": info.name,
        "flow_revision": str(info.flow_revision),
        "flow": info.flow,
    }
    if info.controlled:
        data["running_keys"] = info.running_keys
        data["running_by_key"] = [
            {"key": k.key, "running": k.running, **({"limit": k.limit} if k.limit else {})}
            for k in info.running_by_key
        ]
        data["waiting_by_reason"] = info.waiting_by_reason
    return data


def _echo(info: QueueFlowInfo, as_json: bool) -> None:
    if as_json:
        _echo_json(info_json(info))
        return
    flow = info.flow
    lines = [f"queue {info.name} ({info.id}), flow revision {info.flow_revision}"]
    if not info.controlled:
        lines.append("no flow control (leases take the fast path)")
    if "max_running_per_key" in flow:
        lines.append(f"max running per key: {flow['max_running_per_key']}")
    for rule in flow.get("key_limits", ()):
        lines.append(f"key limit: {rule['pattern']} = {rule['max_running']}")
    if "rate" in flow:
        rate = flow["rate"]
        scope = "per concurrency key" if rate["per_key"] else "per queue"
        lines.append(f"rate: {rate['per_second']}/s, burst {rate['burst']} ({scope})")
    lines.append(f"fairness: {'on' if flow.get('fairness') else 'off'}")
    if info.controlled:
        waiting = ", ".join(f"{k} {v}" for k, v in sorted(info.waiting_by_reason.items()))
        lines.append(f"waiting (ready, held by a limit): {waiting}")
        lines.append(f"concurrency keys running: {info.running_keys}")
    click.echo("\n".join(lines))
    if info.running_by_key:
        rows = [[k.key, k.running, "" if k.limit is None else k.limit] for k in info.running_by_key]
        click.echo(table(["KEY", "RUNNING", "LIMIT"], rows))


@queue.command("show")
@click.argument("queue_id")
@connection
@json_option
def queue_show(queue_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """A queue's flow settings, its busiest concurrency keys and its ready tasks held by
    each limit (ORBIT_URL, ORBIT_TOKEN; tasks:read)."""
    _echo(_call(url, token, lambda c: c.get_queue(queue_id)), as_json)


def _key_limit(text: str) -> dict[str, Any]:
    pattern, sep, number = text.rpartition("=")
    if not sep or not pattern or not number.isdigit() or int(number) < 1:
        raise click.BadParameter(
            f"{text!r}: write PATTERN=N, e.g. 'bank-*=2'", param_hint="--key-limit"
        )
    return {"pattern": pattern, "max_running": int(number)}


def _key_limits(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[dict[str, Any], ...]:
    return tuple(_key_limit(text) for text in values)


def changed_flow(current: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The settings `queue set` writes: the current ones (none with --clear) with the rules
    given replaced."""
    flow = {} if options["clear"] else {k: v for k, v in current.items()}
    if options["max_running_per_key"] is not None:
        flow["max_running_per_key"] = options["max_running_per_key"]
    if options["no_max_running_per_key"]:
        flow.pop("max_running_per_key", None)
    if options["key_limit"]:
        flow["key_limits"] = list(options["key_limit"])
    if options["no_key_limits"]:
        flow.pop("key_limits", None)
    flow.update(_rate(flow.get("rate"), options))
    if options["no_rate"]:
        flow.pop("rate", None)
    if options["fairness"] is not None:
        flow["fairness"] = options["fairness"]
    return flow


def _rate(current: dict[str, Any] | None, options: dict[str, Any]) -> dict[str, Any]:
    given = {k: options[k] for k in ("rate", "burst", "per_key") if options[k] is not None}
    if not given:
        return {}
    if current is None and "rate" not in given:
        raise click.UsageError("--burst and --rate-per-key/--rate-per-queue need --rate N")
    rate = dict(current or {})
    if "rate" in given:
        rate["per_second"] = given["rate"]
        if (
            current is not None
            and "burst" not in given
            and rate.get("burst") == current.get("per_second")
        ):
            rate.pop("burst", None)  # the burst followed the rate: keep following it
    if "burst" in given:
        rate["burst"] = given["burst"]
    if "per_key" in given:
        rate["per_key"] = given["per_key"]
    return {"rate": rate}


@queue.command("set")
@click.argument("queue_id")
@click.option(
    "--max-running-per-key",
    type=click.IntRange(1),
    help="LEASED + RUNNING tasks per concurrency key.",
)
@click.option("--no-max-running-per-key", is_flag=True, help="Remove the per-key limit.")
@click.option(
    "--key-limit",
    multiple=True,
    metavar="PATTERN=N",
    callback=_key_limits,
    help="A limit for keys matching a glob (repeat; replaces the list).",
)
@click.option("--no-key-limits", is_flag=True, help="Remove every key pattern limit.")
@click.option("--rate", type=click.IntRange(1), help="Leases per second (a token bucket).")
@click.option("--burst", type=click.IntRange(1), help="Tokens kept at most (default: the rate).")
@click.option(
    "--rate-per-key/--rate-per-queue",
    "per_key",
    default=None,
    help="One bucket per concurrency key, or one for the queue.",
)
@click.option("--no-rate", is_flag=True, help="Remove the rate limit.")
@click.option(
    "--fairness/--no-fairness", default=None, help="Round-robin over fairness keys by weight."
)
@click.option(
    "--clear", is_flag=True, help="Start from no rule at all (then apply the options given)."
)
@click.option(
    "--expected-revision",
    type=click.IntRange(1),
    help="Change only if the settings are at this revision.",
)
@connection
@json_option
def queue_set(
    queue_id: str, url: str | None, token: str | None, as_json: bool, **options: Any
) -> None:
    """Change a queue's flow settings: only the rules given, the others kept (ORBIT_URL,
    ORBIT_TOKEN; queues:admin). Example: orbit queue set QUEUE_ID --max-running-per-key 3
    --rate 50 --burst 100 --fairness"""
    expected = options.pop("expected_revision")
    tristate = {"fairness", "per_key"}  # --no-fairness is a change too
    given = [k for k, v in options.items() if v or (k in tristate and v is not None)]
    if not given:
        raise click.UsageError(
            "give a rule to change (--max-running-per-key, --key-limit, --rate, --burst, "
            "--fairness, their --no- forms) or --clear"
        )

    def change(client: Client) -> QueueFlowInfo:
        current = client.get_queue(queue_id)
        flow = changed_flow(current.flow, options)
        return client.set_queue_flow(queue_id, flow, expected or current.flow_revision)

    _echo(_call(url, token, change), as_json)
