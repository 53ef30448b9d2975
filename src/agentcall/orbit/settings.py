"""The server's settings: one frozen `ServerSettings`, read from the `ORBIT_*` environment
variables where the server is assembled (`orbit serve`, the `uvicorn --factory` entry point in
`agentcall.orbit.assembly.server`) and passed down from there as plain values. Nothing below this
module reads the environment. A bad value stops the server with a message naming the variable.

Each variable can also be written in a TOML file (`orbit serve --config FILE` or
`ORBIT_CONFIG`), as the variable's name without `ORBIT_`, in lower case (`port = 7470`,
`database_url = "..."`), at the top level or in an `[orbit]` table. Precedence: command line,
then environment, then the file, then the defaults (`load`).

The worker and client command lines have their own settings in `agentcall.orbit.sdk.settings`.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.domain.leasing import DEFAULT_LEASE_TTL_MS, DEFAULT_RECONNECT_GRACE_MS

ENV_DATABASE = "ORBIT_DATABASE_URL"
ENV_HOST = "ORBIT_HOST"
ENV_PORT = "ORBIT_PORT"
ENV_LOG_FORMAT = "ORBIT_LOG_FORMAT"
ENV_POOL = "ORBIT_POOL_SIZE"
ENV_ACCESS_LOG = "ORBIT_ACCESS_LOG"
ENV_WORKERS = "ORBIT_WORKERS"
ENV_SSL_CERTFILE = "ORBIT_SSL_CERTFILE"
ENV_SSL_KEYFILE = "ORBIT_SSL_KEYFILE"
ENV_CONFIG = "ORBIT_CONFIG"
ENV_TOKEN_CACHE_MS = "ORBIT_TOKEN_CACHE_MS"
ENV_SUBMIT_LANES = "ORBIT_SUBMIT_LANES"
ENV_LEASE_TTL_MS = "ORBIT_LEASE_TTL_MS"
ENV_RECONNECT_GRACE_MS = "ORBIT_RECONNECT_GRACE_MS"
ENV_SWEEP_INTERVAL_MS = "ORBIT_SWEEP_INTERVAL_MS"
ENV_DISPATCH_TICK_MS = "ORBIT_DISPATCH_TICK_MS"
ENV_WRITE_LANES = "ORBIT_WRITE_LANES"
ENV_EAGER_DISPATCH = "ORBIT_EAGER_DISPATCH"
ENV_REMOTE_EAGER = "ORBIT_REMOTE_EAGER"
ENV_WORKER_TOKEN_CHECK_MS = "ORBIT_WORKER_TOKEN_CHECK_MS"
ENV_BULK_CLAIM_MS = "ORBIT_BULK_CLAIM_MS"
ENV_PEER_HOST = "ORBIT_PEER_HOST"
ENV_PEER_PORT = "ORBIT_PEER_PORT"
ENV_PEER_ADVERTISE = "ORBIT_PEER_ADVERTISE"
ENV_ALLOWED_HOSTS = "ORBIT_ALLOWED_HOSTS"
ENV_TRUSTED_PROXIES = "ORBIT_TRUSTED_PROXIES"
ENV_CONSOLE_IDLE_S = "ORBIT_CONSOLE_IDLE_S"
ENV_CONSOLE_MAX_AGE_S = "ORBIT_CONSOLE_MAX_AGE_S"
ENV_TRACING = "ORBIT_TRACING"

DEFAULT_DATABASE = "sqlite+aiosqlite:///var/orbit.db"
DEFAULT_HOST = "127.0.0.1"
# Not 8080 (the local S3's volume server), nor a port of the other services: the cell 8470,
# the Dispatcher 9470, the mock SaaS 8088.
DEFAULT_PORT = 7470
DEFAULT_POOL_SIZE = 20
MAX_WORKERS = 64
DEFAULT_TOKEN_CACHE_MS, MAX_TOKEN_CACHE_MS = 1000, 60_000
DEFAULT_SUBMIT_LANES, MAX_SUBMIT_LANES = 2, 16


@dataclass(frozen=True, slots=True)
class ExecutionSettings:
    """The execution side: leases, the upkeep and dispatch loops, the write lanes of the
    batcher and eager dispatch (docs/orbit/worker-protocol.md §8)."""

    lease_ttl_ms: int = DEFAULT_LEASE_TTL_MS
    reconnect_grace_ms: int = DEFAULT_RECONNECT_GRACE_MS
    sweep_interval_ms: int = 200
    dispatch_tick_ms: int = 250
    lanes: int = 0  # 0: 1 on SQLite (single writer), 4 on MySQL/MariaDB
    eager: bool = True  # lease a submit to an idle connection in its own transaction
    # ... and to an idle connection of another server process that offered it
    # (docs/orbit/scaling.md "Remote eager dispatch"); only where several processes share
    # the database (MySQL/MariaDB)
    remote_eager: bool = True
    # how often the tokens of open worker sessions are re-checked (revocation, expiry):
    # a revoked token's sessions end, and get no lease, within this time
    worker_token_check_ms: int = 1000
    # how long a server process's claim on a bulk operation lasts between two batches: a
    # process that died leaves its operations to another (or itself, restarted) after this
    bulk_claim_ms: int = 30_000
    # cross-process wake-ups (docs/orbit/scaling.md): where this process hears the other
    # processes' hints (UDP; port 0: any free port) and the host it tells them to use
    # (default: peer_host); MySQL/MariaDB only
    peer_host: str = "127.0.0.1"
    peer_port: int = 0
    peer_advertise: str = ""


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    """The console's edge (docs/orbit/console.md): the `Host` names it answers besides the
    loopback names (`.example.com`: the name and its subdomains; `*`: any), the proxies
    (CIDRs) whose `X-Forwarded-Proto`/`X-Forwarded-Host` are believed, and how long a
    sign-in lasts unused (`idle_s`) and at most (`max_age_s`)."""

    allowed_hosts: tuple[str, ...] = ()
    trusted_proxies: tuple[str, ...] = ()
    idle_s: int = 1800
    max_age_s: int = 43_200


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Everything one server process is built from. `token_cache_ms` is how old a cached
    token record may be (0: no cache, `agentcall.orbit.store.token_cache`); `submit_lanes` how many
    submit groups commit at once on MySQL/MariaDB (SQLite has one writer)."""

    database_url: str = DEFAULT_DATABASE
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    log_format: str = "auto"
    access_log: bool = True
    pool_size: int = DEFAULT_POOL_SIZE
    workers: int = 1  # server processes (MySQL/MariaDB only)
    ssl_certfile: str | None = None  # TLS: certificate chain (PEM), with the key or without
    ssl_keyfile: str | None = None
    token_cache_ms: int = DEFAULT_TOKEN_CACHE_MS
    submit_lanes: int = DEFAULT_SUBMIT_LANES
    execution: ExecutionSettings = field(default_factory=ExecutionSettings)
    console: ConsoleSettings = field(default_factory=ConsoleSettings)
    tracing: bool = False  # OpenTelemetry spans over OTLP, set by OTEL_* (docs/orbit/tracing.md)


def from_environ(environ: Mapping[str, str] | None = None) -> ServerSettings:
    """The settings given by `environ` (default: this process's environment); a variable
    that is unset or empty keeps its default."""
    env = os.environ if environ is None else environ
    execution = ExecutionSettings(
        lease_ttl_ms=_int(env, ENV_LEASE_TTL_MS, DEFAULT_LEASE_TTL_MS, 300, 3_600_000),
        reconnect_grace_ms=_int(
            env, ENV_RECONNECT_GRACE_MS, DEFAULT_RECONNECT_GRACE_MS, 0, 3_600_000
        ),
        sweep_interval_ms=_int(env, ENV_SWEEP_INTERVAL_MS, 200, 10, 60_000),
        dispatch_tick_ms=_int(env, ENV_DISPATCH_TICK_MS, 250, 10, 60_000),
        lanes=_int(env, ENV_WRITE_LANES, 0, 0, 32),
        eager=_int(env, ENV_EAGER_DISPATCH, 1, 0, 1) == 1,
        remote_eager=_int(env, ENV_REMOTE_EAGER, 1, 0, 1) == 1,
        worker_token_check_ms=_int(env, ENV_WORKER_TOKEN_CHECK_MS, 1000, 50, 30_000),
        bulk_claim_ms=_int(env, ENV_BULK_CLAIM_MS, 30_000, 500, 600_000),
        peer_host=env.get(ENV_PEER_HOST) or "127.0.0.1",
        peer_port=_int(env, ENV_PEER_PORT, 0, 0, 65535),
        peer_advertise=env.get(ENV_PEER_ADVERTISE) or "",
    )
    return ServerSettings(
        database_url=env.get(ENV_DATABASE) or DEFAULT_DATABASE,
        host=env.get(ENV_HOST) or DEFAULT_HOST,
        port=_int(env, ENV_PORT, DEFAULT_PORT, 1, 65535),
        log_format=env.get(ENV_LOG_FORMAT) or "auto",
        access_log=_int(env, ENV_ACCESS_LOG, 1, 0, 1) == 1,
        pool_size=_int(env, ENV_POOL, DEFAULT_POOL_SIZE, 1, 500),
        workers=_int(env, ENV_WORKERS, 1, 1, MAX_WORKERS),
        ssl_certfile=env.get(ENV_SSL_CERTFILE) or None,
        ssl_keyfile=env.get(ENV_SSL_KEYFILE) or None,
        token_cache_ms=_int(env, ENV_TOKEN_CACHE_MS, DEFAULT_TOKEN_CACHE_MS, 0, MAX_TOKEN_CACHE_MS),
        submit_lanes=_int(env, ENV_SUBMIT_LANES, DEFAULT_SUBMIT_LANES, 1, MAX_SUBMIT_LANES),
        execution=execution,
        console=ConsoleSettings(
            allowed_hosts=_hosts(env.get(ENV_ALLOWED_HOSTS) or ""),
            trusted_proxies=_networks(env.get(ENV_TRUSTED_PROXIES) or ""),
            idle_s=_int(env, ENV_CONSOLE_IDLE_S, 1800, 60, 86_400),
            max_age_s=_int(env, ENV_CONSOLE_MAX_AGE_S, 43_200, 300, 2_592_000),
        ),
        tracing=_int(env, ENV_TRACING, 0, 0, 1) == 1,
    )


def to_environ(settings: ServerSettings) -> dict[str, str]:
    """The variables that `from_environ` reads back as `settings`."""
    execution = settings.execution
    return {
        ENV_DATABASE: settings.database_url,
        ENV_HOST: settings.host,
        ENV_PORT: str(settings.port),
        ENV_LOG_FORMAT: settings.log_format,
        ENV_ACCESS_LOG: "1" if settings.access_log else "0",
        ENV_POOL: str(settings.pool_size),
        ENV_WORKERS: str(settings.workers),
        ENV_SSL_CERTFILE: settings.ssl_certfile or "",
        ENV_SSL_KEYFILE: settings.ssl_keyfile or "",
        ENV_TOKEN_CACHE_MS: str(settings.token_cache_ms),
        ENV_SUBMIT_LANES: str(settings.submit_lanes),
        ENV_LEASE_TTL_MS: str(execution.lease_ttl_ms),
        ENV_RECONNECT_GRACE_MS: str(execution.reconnect_grace_ms),
        ENV_SWEEP_INTERVAL_MS: str(execution.sweep_interval_ms),
        ENV_DISPATCH_TICK_MS: str(execution.dispatch_tick_ms),
        ENV_WRITE_LANES: str(execution.lanes),
        ENV_EAGER_DISPATCH: "1" if execution.eager else "0",
        ENV_REMOTE_EAGER: "1" if execution.remote_eager else "0",
        ENV_WORKER_TOKEN_CHECK_MS: str(execution.worker_token_check_ms),
        ENV_BULK_CLAIM_MS: str(execution.bulk_claim_ms),
        ENV_PEER_HOST: execution.peer_host,
        ENV_PEER_PORT: str(execution.peer_port),
        ENV_PEER_ADVERTISE: execution.peer_advertise,
        ENV_ALLOWED_HOSTS: ",".join(settings.console.allowed_hosts),
        ENV_TRUSTED_PROXIES: ",".join(settings.console.trusted_proxies),
        ENV_CONSOLE_IDLE_S: str(settings.console.idle_s),
        ENV_CONSOLE_MAX_AGE_S: str(settings.console.max_age_s),
        ENV_TRACING: "1" if settings.tracing else "0",
    }


def load(
    config_file: Path | None = None, environ: Mapping[str, str] | None = None
) -> ServerSettings:
    """The settings of `environ` (default: this process's environment) over those of the TOML
    file `config_file` (default: the file named by `ORBIT_CONFIG`, if any)."""
    env = os.environ if environ is None else environ
    if config_file is None and env.get(ENV_CONFIG):
        config_file = Path(env[ENV_CONFIG])
    if config_file is None:
        return from_environ(env)
    from_file = read_config(config_file)
    try:
        from_environ(from_file)
    except SetupError as exc:  # name the file's key, not the variable
        names = re.sub(r"\bORBIT_(\w+)", lambda m: m[1].lower(), exc.message)
        raise SetupError(f"config file {config_file}: {names}") from None
    return from_environ({**from_file, **{k: v for k, v in env.items() if v}})


def database_url(environ: Mapping[str, str] | None = None) -> str:
    """The database of the operator commands (`orbit migrate`, `init`, ...): `ORBIT_DATABASE_URL`,
    else `database_url` in the file of `ORBIT_CONFIG`, else the default."""
    env = os.environ if environ is None else environ
    if env.get(ENV_DATABASE):
        return env[ENV_DATABASE]
    if env.get(ENV_CONFIG):
        return read_config(Path(env[ENV_CONFIG])).get(ENV_DATABASE) or DEFAULT_DATABASE
    return DEFAULT_DATABASE


def read_config(path: Path) -> dict[str, str]:
    """The variables a TOML config file sets, as `ORBIT_*` names and text values."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SetupError(f"cannot read the config file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SetupError(f"config file {path} is not valid TOML: {exc}") from None
    table = data.get("orbit", data)
    if not isinstance(table, dict):
        raise SetupError(f"config file {path}: [orbit] must be a table")
    known = {name.removeprefix("ORBIT_").lower(): name for name in to_environ(ServerSettings())}
    values = {}
    for key, value in table.items():
        if key not in known:
            raise SetupError(
                f"config file {path}: unknown setting {key!r}; known: {', '.join(sorted(known))}"
            )
        values[known[key]] = _text(path, key, value)
    return values


def _text(path: Path, key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | str):
        return str(value)
    raise SetupError(f"config file {path}: {key} must be a string, an integer or a boolean")


def export(settings: ServerSettings, environ: MutableMapping[str, str] | None = None) -> None:
    """Hand `settings` to server processes started from this one (`orbit serve --workers N`
    starts them through uvicorn, and each builds its app with `from_environ`)."""
    (os.environ if environ is None else environ).update(to_environ(settings))


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = env.get(name)
    if text is None or text == "":
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise SetupError(f"{name} must be an integer {low}-{high}, got {text!r}")
    return int(text)


_HOST = re.compile(r"\.?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*|\*")


def _hosts(text: str) -> tuple[str, ...]:
    """Host names (lower case, no port), `.suffix` patterns, IP addresses or `*`."""
    hosts = []
    for item in text.replace(",", " ").lower().split():
        bare = item[1:-1] if item.startswith("[") and item.endswith("]") else item
        try:
            hosts.append(str(ipaddress.ip_address(bare)))
            continue
        except ValueError:
            pass
        if not _HOST.fullmatch(item) or len(item) > 253:
            raise SetupError(
                f"{ENV_ALLOWED_HOSTS} must list host names without ports (e.g. "
                f"orbit.example.com,.example.com), got {item!r}"
            )
        hosts.append(item)
    return tuple(hosts)


def _networks(text: str) -> tuple[str, ...]:
    networks = []
    for item in text.replace(",", " ").split():
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise SetupError(
                f"{ENV_TRUSTED_PROXIES} must list IP networks (e.g. 10.0.0.0/8,::1/128), "
                f"got {item!r}"
            ) from None
    return tuple(networks)
