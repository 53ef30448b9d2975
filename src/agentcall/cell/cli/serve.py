"""``cell serve``: one cell process (its options, the start-up checks, the server)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import uvicorn

from agentcall import logs
from agentcall.cell.agent.mock import mock_registry
from agentcall.cell.cli.startup import refusals
from agentcall.cell.domain.errors import CellConfigError, CellError, StateLostError
from agentcall.cell.runtime.service import CellConfig, CellService
from agentcall.cell.runtime.uploads import EXPIRY_SKEW_S
from agentcall.cell.server.app import build_app
from agentcall.cell.server.edge import HttpLimits, bounded_protocol
from agentcall.cell.sim.driver import SimDriver
from agentcall.cell.sim.script import Script, load_script

log = logging.getLogger("cell.cli")
STATE_LOST_EXIT = 3  # the originate log is lost: the cell stopped so as not to dial twice
DEFAULT_LIMITS = HttpLimits()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only then
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise click.UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


class Halt:
    """Stops the running server (the service calls it when its originate log is lost)."""

    def __init__(self) -> None:
        self.server: uvicorn.Server | None = None

    def __call__(self) -> None:
        if self.server is not None:
            self.server.should_exit = True


def _service(script: Script, config: CellConfig, halt: Halt) -> CellService:
    if config.mode == "sip":  # real SIP calls to the pinned trunk (docs/cell-sip.md)
        from agentcall.cell.sip.setup import sip_driver

        try:
            driver, registry = sip_driver()
        except CellConfigError as exc:
            raise click.UsageError(exc.message) from None
        return CellService(replace(config, time_scale=1.0), driver, registry, on_state_lost=halt)
    providers = mock_registry()
    driver_ = SimDriver(script, providers, config.time_scale)
    return CellService(config, driver_, providers, on_state_lost=halt)


def _http_option(
    envvar: str, kind: click.FloatRange | click.IntRange, default: float, help_: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """One bound of the HTTP edge, read from `envvar` (CELL_HTTP_<NAME>, named whole so that
    a search finds it) or `--http-<name>`."""
    name = envvar.removeprefix("CELL_HTTP_").lower().replace("_", "-")
    return click.option(
        f"--http-{name}",
        type=kind,
        default=default,
        show_default=True,
        envvar=envvar,
        help=help_,
    )


def _http_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The bounds of the HTTP edge (agentcall.cell.server.edge), CELL_HTTP_*."""
    seconds = click.FloatRange(min=0.01, max=3600.0)
    options = [
        _http_option(
            "CELL_HTTP_HEADER_TIMEOUT_S",
            seconds,
            DEFAULT_LIMITS.header_timeout_s,
            "A request line and headers must arrive within this (else 408, closed).",
        ),
        _http_option(
            "CELL_HTTP_BODY_TIMEOUT_S",
            seconds,
            DEFAULT_LIMITS.body_timeout_s,
            "A request body must arrive within this after its headers (else closed).",
        ),
        _http_option(
            "CELL_HTTP_KEEP_ALIVE_S",
            seconds,
            DEFAULT_LIMITS.keep_alive_s,
            "An idle keep-alive connection is closed after this.",
        ),
        _http_option(
            "CELL_HTTP_MAX_CONNECTIONS",
            click.IntRange(1, 100_000),
            DEFAULT_LIMITS.max_connections,
            "Open connections at most (HTTP and WebSocket); one more is answered 503.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _load_approved(service: CellService, path: Path | None) -> None:
    if path is None:
        return
    try:
        service.approved.load(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, CellConfigError) as exc:
        raise click.UsageError(f"--sip-config: {exc}") from None
    except CellError as exc:
        raise click.UsageError(f"--sip-config: {exc.message}") from None


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


@click.command()
@click.option(
    "--mode",
    type=click.Choice(["sim", "sip"]),
    default="sim",
    show_default=True,
    envvar="CELL_MODE",
    help="How calls are placed.",
)
@click.option(
    "--script",
    "script_path",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="CELL_SCRIPT",
    help="Simulation script (JSON); sim mode. Default: everyone answers and says two lines.",
)
@click.option(
    "--http-host",
    default="127.0.0.1",
    show_default=True,
    envvar="CELL_HTTP_HOST",
    help="Address of the HTTP/WebSocket API.",
)
@click.option(
    "--http-port",
    type=click.IntRange(0, 65535),
    default=8470,
    show_default=True,
    envvar="CELL_HTTP_PORT",
    help="Port of the API (0: any free port, written to <data-dir>/cell.url).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    envvar="CELL_DATA_DIR",
    help="Recordings, originate log and lock of this cell.",
)
@click.option(
    "--time-scale",
    type=click.FloatRange(min=0.0001, max=100.0),
    default=None,
    envvar="CELL_TIME_SCALE",
    help="Simulated time runs this many times real time "
    "(0.01: a 30 s call takes 0.3 s). Default: the script's, else 1.",
)
@click.option(
    "--max-calls",
    type=click.IntRange(1, 100_000),
    default=1000,
    show_default=True,
    envvar="CELL_MAX_CALLS",
    help="Calls in progress at most; more are refused (503).",
)
@click.option(
    "--cell-id",
    envvar="CELL_ID",
    help="This cell's id, reported in /v1/info; the Dispatcher admits only when it equals"
    " the approved SIP snapshot's artifact.cell_id.",
)
@click.option(
    "--upload-expiry-skew-s",
    type=click.FloatRange(min=0.0, max=3600.0),
    default=EXPIRY_SKEW_S,
    show_default=True,
    envvar="CELL_UPLOAD_EXPIRY_SKEW_S",
    help="A presigned URL expired longer ago than this by the cell's clock is not tried:"
    " the cell answers expired and asks for a renewal (no PUT). 0 trusts its clock.",
)
@click.option(
    "--sip-config",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="CELL_SIP_CONFIG",
    help="Load this approved SIP snapshot (JSON) at start; also PUT /v1/config."
    " Kept in the data dir across restarts.",
)
@click.option(
    "--first-start",
    is_flag=True,
    envvar="CELL_FIRST_START",
    help="Create the originate log even though a cell ran in this data dir before."
    " Without it a missing log there stops the cell (a call could be dialled twice).",
)
@_http_options
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    envvar="CELL_LOG_LEVEL",
)
@click.option(
    "--log-format",
    type=click.Choice(["auto", "json", "text"]),
    default="auto",
    show_default=True,
    envvar="CELL_LOG_FORMAT",
    help="auto: text on a terminal, JSON lines otherwise.",
)
def serve(
    mode: str,
    script_path: Path | None,
    http_host: str,
    http_port: int,
    data_dir: Path,
    time_scale: float | None,
    max_calls: int,
    cell_id: str | None,
    upload_expiry_skew_s: float,
    sip_config: Path | None,
    first_start: bool,
    log_level: str,
    log_format: str,
    **http: Any,
) -> None:
    """Run a cell: HTTP + WebSocket API for the Dispatcher (sim or sip mode).

    Refuses to start on a placeholder value of the example environment (CHANGE-ME) and, in
    sip mode, without the speech programs its providers run (espeak-ng, pocketsphinx)."""
    logs.configure(log_format, log_level)
    _refuse_placeholders_and_missing_tools(mode, cell_id)
    try:
        script = load_script(script_path) if script_path else Script()
    except CellConfigError as exc:
        raise click.UsageError(f"--script: {exc.message}") from None
    scale = time_scale or script.time_scale or 1.0
    config = CellConfig(
        data_dir=data_dir,
        mode=mode,
        time_scale=scale,
        max_calls=max_calls,
        cell_id=cell_id,
        upload_expiry_skew_s=upload_expiry_skew_s,
        first_start=first_start,
    )
    halt = Halt()
    service = _service(script, config, halt)
    _open_state(service)
    _load_approved(service, sip_config)
    sock = _bind(http_host, http_port)
    url = _announce(sock, data_dir)
    log.info(
        "listening",
        extra={"url": url, "boot_id": service.boot_id, "mode": mode, "time_scale": scale},
    )
    limits = HttpLimits(**{name.removeprefix("http_"): value for name, value in http.items()})
    _run(service, sock, halt, limits)


def _refuse_placeholders_and_missing_tools(mode: str, cell_id: str | None) -> None:
    problems = refusals(mode, cell_id, os.environ, shutil.which, _module_found)
    if problems:
        click.echo(f"cell: error: {'; '.join(problems)}", err=True)
        raise SystemExit(2)


def _module_found(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _open_state(service: CellService) -> None:
    """Take the data dir and open the originate log, or stop with one clear line."""
    try:
        service.open_originate_log()
    except StateLostError as exc:
        log.critical("%s", exc.message)
        raise SystemExit(STATE_LOST_EXIT) from None
    except CellConfigError as exc:
        raise click.UsageError(f"--data-dir: {exc.message}") from None


def _announce(sock: socket.socket, data_dir: Path) -> str:
    """The API's URL, also written to ``<data-dir>/cell.url`` (the port may be chosen)."""
    host, port = sock.getsockname()[:2]
    url = f"http://{host}:{port}"
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "cell.url").write_text(url + "\n")
    return url


def _run(service: CellService, sock: socket.socket, halt: Halt, limits: HttpLimits) -> None:
    config = uvicorn.Config(
        build_app(service),
        log_config=None,
        access_log=False,
        lifespan="on",
        http=bounded_protocol(limits),
        timeout_keep_alive=limits.keep_alive_s,  # type: ignore[arg-type]
        ws_ping_interval=20,
        ws_ping_timeout=20,
        ws_max_size=65_536,  # the event stream's client sends nothing but control frames
    )
    halt.server = uvicorn.Server(config)
    # uvicorn stops gracefully on SIGINT/SIGTERM, then re-raises the signal: exit 0 then.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_cleanly)
    try:
        asyncio.run(halt.server.serve(sockets=[sock]))
    except CellConfigError as exc:
        raise click.UsageError(exc.message) from None
    if service.state_lost is not None:
        raise SystemExit(STATE_LOST_EXIT)
