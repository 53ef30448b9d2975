"""Settings of the SDK's command lines, read where they start: `orbit worker` (a frozen
`WorkerSettings`) and `orbit tasks ...` (`ClientSettings`). A command-line option wins over its
`ORBIT_*` variable; a missing or bad value stops the command with a message naming the
variable (`SetupError`). The SDK's classes themselves (`Client`, `Worker`) take plain values
and never read the environment.

The server has its own settings (`agentcall.orbit.settings`); the SDK does not import the server.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.domain.ids import is_id
from agentcall.orbit.domain.tokens import secret_weakness

ENV_URL = "ORBIT_URL"
ENV_TOKEN = "ORBIT_TOKEN"
ENV_LOG_FORMAT = "ORBIT_LOG_FORMAT"
ENV_APP = "ORBIT_WORKER_APP"
ENV_QUEUES = "ORBIT_WORKER_QUEUES"
ENV_CONCURRENCY = "ORBIT_WORKER_CONCURRENCY"
ENV_GRACE_PERIOD = "ORBIT_WORKER_GRACE_PERIOD"
ENV_LOOP = "ORBIT_WORKER_LOOP"
ENV_TRACING = "ORBIT_WORKER_TRACING"

HTTP = ("http://", "https://")
WEBSOCKET = ("ws://", "wss://")


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """Where `orbit tasks ...` sends its requests."""

    url: str
    token: str


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What `orbit worker` serves with: the server, the queues and how the process runs.
    `url` is one server URL or several, comma-separated: the worker moves to the next one
    when its server goes away (docs/orbit/scaling.md)."""

    url: str
    token: str
    queues: tuple[str, ...]
    concurrency: int = 4
    name: str = "orbit-worker"
    grace_period: float = 30.0
    log_format: str = "auto"
    loop: str = "auto"
    tracing: bool = False  # ORBIT_WORKER_TRACING=1: a span around each handler (OTLP)


def client_settings(url: str | None, token: str | None) -> ClientSettings:
    """The API address and token for `orbit tasks ...`, from options or the environment."""
    url, token = _connection(url, token)
    if not url.startswith(HTTP):
        raise SetupError(f"{ENV_URL} must start with http:// or https://, got {url!r}")
    return ClientSettings(url, token)


def worker_settings(
    *,
    url: str | tuple[str, ...] | None,
    token: str | None,
    queues: tuple[str, ...],
    concurrency: int = 4,
    name: str | None = None,
    grace_period: float = 30.0,
    log_format: str = "auto",
    loop: str = "auto",
) -> WorkerSettings:
    """The worker's settings from its options; queues, address and token fall back to the
    environment. The name defaults to `orbit@HOST`. Several URLs: a tuple (repeated `--url`),
    or one text with commas or spaces between them (`ORBIT_URL`)."""
    queue_ids = queues or tuple(os.environ.get(ENV_QUEUES, "").split())
    if not queue_ids or not all(is_id(q) for q in queue_ids):
        raise SetupError(
            f"give one or more --queue QUEUE_ID (32 hex characters) or set {ENV_QUEUES}"
        )
    joined = " ".join(url) if isinstance(url, tuple) else url
    text, token = _connection(joined, token)
    urls = text.replace(",", " ").split()
    bad = [one for one in urls if not one.startswith(HTTP + WEBSOCKET)]
    if bad or not urls:
        raise SetupError(
            f"{ENV_URL} must be an http(s):// or ws(s):// URL (several: separated "
            f"by commas), got {(bad or [text])[0]!r}"
        )
    return WorkerSettings(
        url=",".join(urls),
        token=token,
        queues=queue_ids,
        concurrency=concurrency,
        name=name or f"orbit@{socket.gethostname()}"[:128],
        grace_period=grace_period,
        log_format=log_format,
        loop=loop,
        tracing=_flag(ENV_TRACING),
    )


def _flag(name: str) -> bool:
    """A 0/1 switch of the environment (unset or empty: 0)."""
    text = os.environ.get(name, "").strip() or "0"
    if text not in ("0", "1"):
        raise SetupError(f"{name} must be 0 or 1, got {text!r}")
    return text == "1"


def _connection(url: str | None, token: str | None) -> tuple[str, str]:
    url = url or os.environ.get(ENV_URL)
    token = token or os.environ.get(ENV_TOKEN)
    missing = [name for name, value in ((ENV_URL, url), (ENV_TOKEN, token)) if not value]
    if missing:
        raise SetupError(f"set {' and '.join(missing)} (or pass --url / --token)")
    assert url is not None and token is not None
    weakness = secret_weakness(token)
    if weakness is not None:
        raise SetupError(
            f"{ENV_TOKEN} / --token is not a token Orbit issued: {weakness}; "
            "use the token printed by `orbit init` or `orbit token create`"
        )
    return url, token
