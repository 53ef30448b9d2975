"""``dispatcher`` command line: ``run``, ``init-state``, ``status``, ``check-config``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import httpx

from agentcall.dispatcher.logs import configure, register_secret
from agentcall.dispatcher.settings import Settings, SettingsError, describe, load_settings


def _load(config: Path | None) -> Settings:
    try:
        settings = load_settings(config_file=config)
    except SettingsError as exc:
        click.echo(f"dispatcher: {exc}", err=True)
        raise SystemExit(2) from None
    for secret in (settings.secret_key, settings.s3_secret_key, settings.console_token):
        register_secret(secret.reveal() if secret else "")
    for url in (settings.amqp_url, settings.saas_url, settings.s3_endpoint or ""):
        register_secret(urlsplit(url).password or "")
    return settings


CONFIG = click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="DISPATCHER_CONFIG",
    help="TOML file with a [dispatcher] table; DISPATCHER_* variables override it.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentcall", prog_name="dispatcher")
def main() -> None:
    """The Dispatcher (D): consumes call.execute from the SaaS, admits, drives the cell,
    and publishes command.result / call.result. See docs/dispatcher.md."""


@main.command()
@CONFIG
def run(config: Path | None) -> None:
    """Run the Dispatcher until SIGTERM/SIGINT.

    Required: DISPATCHER_ID, DISPATCHER_SECRET_KEY (or DISPATCHER_SECRET_KEY_FILE),
    DISPATCHER_SAAS_URL, DISPATCHER_AMQP_URL, DISPATCHER_STATE_DB, DISPATCHER_CELL_URL.
    Status/metrics listen on DISPATCHER_HTTP_HOST (127.0.0.1) : DISPATCHER_HTTP_PORT (9470).
    The state file must exist: create it once with dispatcher init-state.
    """
    settings = _load(config)
    configure(settings.log_format, settings.log_level)
    try:
        from agentcall.dispatcher.cell.adapter import CellAdapter
        from agentcall.dispatcher.service import serve
    except ModuleNotFoundError as exc:  # installed without the Dispatcher's dependencies
        if exc.name is None or exc.name.startswith("agentcall"):
            raise
        click.echo(
            f"dispatcher run: the 'dispatcher' extra is not installed ({exc}): "
            "pip install 'agentcall[dispatcher]'",
            err=True,
        )
        raise SystemExit(2) from None

    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        code = runner.run(serve(settings, lambda: CellAdapter(settings.cell_url)))
    raise SystemExit(code)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when available (a faster event loop for the AMQP, HTTP and cell traffic)."""
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


@main.command("init-state")
@CONFIG
@click.option(
    "--restore",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Put this copy of the state (rescued by a D that lost its file, or a backup) back"
    " at DISPATCHER_STATE_DB instead of creating an empty one.",
)
def init_state(config: Path | None, restore: Path | None) -> None:
    """Create the state file of a dispatcher's first start (DISPATCHER_STATE_DB), or
    restore a lost one with --restore; dispatcher run never creates it itself."""
    settings = _load(config)
    from agentcall.dispatcher.store.db import StoreError
    from agentcall.dispatcher.store.state import init_state as create
    from agentcall.dispatcher.store.state import restore_state

    path, did = settings.state_db, settings.dispatcher_id
    try:
        if restore is None:
            asyncio.run(create(path, did))
        else:
            asyncio.run(restore_state(path, restore, did))
    except StoreError as exc:
        click.echo(f"dispatcher: {exc}", err=True)
        raise SystemExit(2) from None
    done = f"restored from {restore}" if restore else "created"
    click.echo(f"state database {path} {done} for dispatcher {did}")


@main.command("check-config")
@CONFIG
def check_config(config: Path | None) -> None:
    """Validate the settings and print them (secrets and URL passwords are never shown).

    Every missing or invalid setting is named in one run (exit 2)."""
    settings = _load(config)
    click.echo(describe(settings))


def _default_url() -> str:
    host = os.environ.get("DISPATCHER_HTTP_HOST", "127.0.0.1")
    port = os.environ.get("DISPATCHER_HTTP_PORT", "9470")
    return f"http://{host}:{port}"


@main.command()
@click.option(
    "--url",
    default=_default_url,
    show_default="http://$DISPATCHER_HTTP_HOST:$DISPATCHER_HTTP_PORT",
    help="Base URL of a running dispatcher's status listener.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON of GET /status.")
def status(url: str, as_json: bool) -> None:
    """Show admission, discovery, tasks, outbox and executions of a running dispatcher."""
    try:
        response = httpx.get(f"{url.rstrip('/')}/status", timeout=5.0)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        click.echo(f"dispatcher status: cannot read {url}/status: {exc}", err=True)
        raise SystemExit(1) from None
    body = response.json()
    click.echo(json.dumps(body, indent=2) if as_json else render(body))


def render(s: dict[str, Any]) -> str:
    adm, disc = s["admission"], s["discovery"]
    why = "; ".join(f"{k}: {v}" for k, v in adm["why_closed"].items())
    lines = [
        f"dispatcher {s['dispatcher_id']}  healthy={s['healthy']}  since {s['started_at']}",
        f"readiness  {_readiness(s.get('readiness'))}",
        f"admission  {'OPEN' if adm['open'] else 'CLOSED (' + why + ')'}  "
        f"latency p50={adm['latency']['p50_ms']} ms p99={adm['latency']['p99_ms']} ms",
        f"discovery  cursor={disc['cursor']} caught_up={disc['caught_up']} "
        f"pages={disc['pages_applied']} rejected={disc['pages_rejected']} errors={disc['errors']}",
        f"outbox     {_pairs(s['outbox'])}",
        f"executions {_pairs(s['executions'])}",
        f"recordings {_pairs(s.get('recordings', {})) or '-'}",
        f"commands   {_pairs(s['commands']) or '-'}",
        f"amqp       connected={s['amqp']['connected']}   cell boot={s['calls']['cell_boot_id']}",
        "tasks:",
    ]
    for t in s["tasks"]:
        lines.append(
            f"  {t['task_id']:<24} {t['status']:<9} rev={t['task_revision']:<4} "
            f"barrier={t['barrier']:<8} consumer={t['consumer']:<14} {t['admission']}"
        )
    if s["last_errors"]:
        lines.append("last errors:")
        lines.extend(f"  [{e['source']}] {e['error']}" for e in s["last_errors"][:10])
    return "\n".join(lines)


def _readiness(verdict: dict[str, Any] | None) -> str:
    if not verdict:
        return "-"
    if verdict["ready"]:
        return "READY"
    causes = "; ".join(f"{c['cause']}: {c['detail']}" for c in verdict["causes"])
    return f"NOT READY ({causes})"


def _pairs(values: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items() if v)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
