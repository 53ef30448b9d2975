"""Typed settings of the Dispatcher: a TOML file and ``DISPATCHER_*`` environment variables.

Environment variables win over the file. Every value is validated at start; the process
stops with one message that names every missing or invalid setting (``DISPATCHER_X`` /
``x``) and says what a valid value looks like. The secret key comes only from the environment
(``DISPATCHER_SECRET_KEY``) or from a file readable by the service user alone
(``DISPATCHER_SECRET_KEY_FILE`` / ``secret_key_file``); it is never printed.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import MISSING as _MISSING
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentcall.dispatcher.errors import DispatcherError
from agentcall.dispatcher.settings_http import HTTP_EDGE_PARSERS, HttpEdgeSettings
from agentcall.dispatcher.settings_values import port as _port
from agentcall.dispatcher.settings_values import token_problem
from agentcall.dispatcher.settings_values import url as _url

ENV_PREFIX = "DISPATCHER_"


class SettingsError(DispatcherError):
    """A setting is missing or invalid; the message names it. Fix the env var or TOML key."""


_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class Secret:
    """A string that never shows itself in ``repr``/``str`` (logs, status, tracebacks)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class Settings(HttpEdgeSettings):
    """All settings of ``dispatcher run``; see docs/dispatcher.md for each one."""

    dispatcher_id: str
    secret_key: Secret = field(repr=False)
    saas_url: str
    amqp_url: str
    state_db: Path
    cell_url: str
    http_host: str = "127.0.0.1"
    http_port: int = 9470
    # The console's bearer token (or basic-auth password); required unless bound to loopback.
    console_token: Secret | None = field(default=None, repr=False)
    discovery_interval_s: float = 30.0
    discovery_error_backoff_s: float = 5.0
    config_ttl_s: float = 60.0
    quota_ttl_s: float = 60.0
    http_timeout_s: float = 5.0
    # D-NOTE-2: failed SaaS reads are retried after base·2^n seconds (jittered), at most max
    saas_retry_base_s: float = 0.5
    saas_retry_max_s: float = 30.0
    clock_skew_s: float = 120.0  # D-NOTE-3: how far in the future issued_at may lie
    prefetch: int = 64  # per task queue at most
    inflight: int = 128  # unacknowledged deliveries over all task queues (their share each)
    intake_batch: int = 64  # bounds how long a dialing mark waits behind an admission batch
    outbox_retry_s: float = 1.0
    outbox_batch: int = 500
    grace_s: float = 10.0
    log_format: str = "auto"
    log_level: str = "INFO"
    # Recordings (D-REC-1/2): object storage for presigned PUTs; no bucket = no uploads.
    s3_endpoint: str | None = None
    s3_bucket: str | None = None
    s3_region: str = "us-east-1"
    s3_access_key: str | None = None
    s3_secret_key: Secret | None = field(default=None, repr=False)
    s3_key_prefix: str = "calls"
    upload_authorization_s: float = 900.0
    recording_deadline_s: float = 900.0
    recording_sweep_s: float = 1.0
    # Answering machines: off | hangup | leave_message, pinned in every accepted call's
    # plan; None leaves it to the cell's default (its CELL_AMD).
    amd: str | None = None
    # OpenTelemetry traces of each call.execute over OTLP (the OTEL_* variables), 0 or 1.
    tracing: bool = False


# --- parsers: each returns the typed value or raises ValueError(explanation) ---


def _uuid4(raw: str) -> str:
    if not _UUID4.fullmatch(raw):
        raise ValueError("must be a lowercase canonical UUID v4 (D-ID-1)")
    return raw


def _positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise ValueError("must be a number > 0")
    return value


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError("must be an integer >= 1")
    return value


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.lower() if raw.lower() in allowed else raw.upper()
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value

    return parse


def _bucket(raw: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", raw):
        raise ValueError("must be an S3 bucket name (3-63 lowercase letters, digits, '.', '-')")
    return raw


def _key_prefix(raw: str) -> str:
    value = raw.strip("/")
    if not re.fullmatch(r"[A-Za-z0-9!_.*'()/-]{1,200}", value):
        raise ValueError("must be 1-200 characters of [A-Za-z0-9!_.*'()/-]")
    return value


def _token(raw: str) -> Secret:
    problem = token_problem(raw)
    if problem is not None:
        raise ValueError(f"{problem} (e.g. openssl rand -hex 24)")
    return Secret(raw)


def is_loopback(host: str) -> bool:
    """``host`` is reachable from this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind_problems(values: Mapping[str, Any]) -> list[str]:
    """The console is open to whoever reaches the HTTP port: off loopback it needs a token."""
    host = values.get("http_host", "127.0.0.1")
    if is_loopback(host) or values.get("console_token") is not None:
        return []
    return [
        f"DISPATCHER_HTTP_HOST={host} is not a loopback address and DISPATCHER_CONSOLE_TOKEN"
        " is not set: set a token of at least 16 characters (the console then asks for it as"
        " a bearer token or a basic-auth password) or bind DISPATCHER_HTTP_HOST=127.0.0.1"
    ]


def _pair_problems(values: Mapping[str, Any]) -> list[str]:
    """Settings valid alone but not together."""
    problems = []
    if (values.get("s3_access_key") is None) != (values.get("s3_secret_key") is None):
        problems.append(
            "DISPATCHER_S3_ACCESS_KEY and DISPATCHER_S3_SECRET_KEY go together: set both, or"
            " neither (the default AWS credential chain is then used)"
        )
    base = values.get("saas_retry_base_s", Settings.saas_retry_base_s)
    cap = values.get("saas_retry_max_s", Settings.saas_retry_max_s)
    if base > cap:
        problems.append(
            f"DISPATCHER_SAAS_RETRY_BASE_S ({base}) is above DISPATCHER_SAAS_RETRY_MAX_S"
            f" ({cap}): the first retry may not wait longer than the longest; lower the base"
            " or raise the maximum"
        )
    return problems


def _tracing(raw: str) -> bool:
    on = {"0": False, "1": True, "false": False, "true": True}.get(raw.lower())
    if on is None:
        raise ValueError("must be 0 or 1")
    if on and importlib.util.find_spec("opentelemetry.sdk") is None:
        raise ValueError("tracing needs the OpenTelemetry packages: pip install 'agentcall[otel]'")
    return on


def _quota_ttl(raw: str) -> float:
    value = _positive_float(raw)
    if value > 60:
        raise ValueError("must be at most 60 seconds (D-CFG-3)")
    return value


_PARSERS: dict[str, Callable[[str], Any]] = {
    "dispatcher_id": _uuid4,
    "saas_url": _url("http", "https"),
    "amqp_url": _url("amqp", "amqps"),
    "state_db": Path,
    "cell_url": _url("http", "https"),
    "http_host": str,
    "http_port": _port,
    "console_token": _token,
    "discovery_interval_s": _positive_float,
    "discovery_error_backoff_s": _positive_float,
    "config_ttl_s": _positive_float,
    "quota_ttl_s": _quota_ttl,
    "http_timeout_s": _positive_float,
    "saas_retry_base_s": _positive_float,
    "saas_retry_max_s": _positive_float,
    "clock_skew_s": _positive_float,
    "prefetch": _positive_int,
    "inflight": _positive_int,
    "intake_batch": _positive_int,
    "outbox_retry_s": _positive_float,
    "outbox_batch": _positive_int,
    "grace_s": _positive_float,
    "log_format": _choice("auto", "json", "text"),
    "log_level": _choice("DEBUG", "INFO", "WARNING", "ERROR"),
    "s3_endpoint": _url("http", "https"),
    "s3_bucket": _bucket,
    "s3_region": str,
    "s3_access_key": str,
    "s3_secret_key": Secret,
    "s3_key_prefix": _key_prefix,
    "upload_authorization_s": _positive_float,
    "recording_deadline_s": _positive_float,
    "recording_sweep_s": _positive_float,
    "amd": _choice("off", "hangup", "leave_message"),
    "tracing": _tracing,
    **HTTP_EDGE_PARSERS,
}
_FILE_ONLY_KEYS = {"secret_key_file"}


def env_name(key: str) -> str:
    """Environment variable of a setting: ``dispatcher_id`` → ``DISPATCHER_ID``."""
    return f"{ENV_PREFIX}{key.upper().removeprefix('DISPATCHER_')}"


def _describe(key: str, from_env: bool) -> str:
    return env_name(key) if from_env else f"{key} (config file)"


def _read_toml(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError as exc:
        raise SettingsError(f"config file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"config file {path} is not valid TOML: {exc}") from exc
    section = data.get("dispatcher", data)
    if not isinstance(section, dict):
        raise SettingsError(f"config file {path}: [dispatcher] must be a table")
    return section


def _file_key_problems(toml: Mapping[str, Any]) -> list[str]:
    problems = []
    if "secret_key" in toml:
        problems.append(
            "secret_key must not be written in the config file; set DISPATCHER_SECRET_KEY "
            "or point secret_key_file / DISPATCHER_SECRET_KEY_FILE at a file with mode 0600"
        )
    known = set(_PARSERS) | _FILE_ONLY_KEYS | {"secret_key"}
    problems += [
        f"{key} (config file) is not a known setting; see docs/dispatcher.md"
        for key in toml
        if key not in known
    ]
    return problems


def _load_secret(env: Mapping[str, str], toml: Mapping[str, Any]) -> Secret:
    direct = env.get(f"{ENV_PREFIX}SECRET_KEY")
    if direct:
        return Secret(direct)
    path_raw = env.get(f"{ENV_PREFIX}SECRET_KEY_FILE") or toml.get("secret_key_file")
    if not path_raw:
        raise SettingsError(
            "DISPATCHER_SECRET_KEY is missing: set it, or DISPATCHER_SECRET_KEY_FILE "
            "(or secret_key_file in the config file) to a file readable only by this user"
        )
    return _read_secret_file(Path(str(path_raw)))


def _read_secret_file(path: Path) -> Secret:
    try:
        info = path.stat()
    except OSError as exc:
        raise SettingsError(f"DISPATCHER_SECRET_KEY_FILE {path} cannot be read: {exc}") from exc
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise SettingsError(
            f"DISPATCHER_SECRET_KEY_FILE {path} is readable by group/others; run chmod 600 {path}"
        )
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise SettingsError(f"DISPATCHER_SECRET_KEY_FILE {path} is empty")
    return Secret(value)


def _value_for(key: str, env: Mapping[str, str], toml: Mapping[str, Any]) -> tuple[Any, bool]:
    env_value = env.get(env_name(key))
    if env_value is not None and env_value != "":
        return env_value, True
    return toml.get(key), False


def load_settings(
    env: Mapping[str, str] | None = None, config_file: Path | None = None
) -> Settings:
    """Build settings from ``env`` (default ``os.environ``) and an optional TOML file; every
    problem found is named in the one :class:`SettingsError` raised."""
    env = os.environ if env is None else env
    if config_file is None and env.get(f"{ENV_PREFIX}CONFIG"):
        config_file = Path(env[f"{ENV_PREFIX}CONFIG"])
    toml = _read_toml(config_file)  # an unreadable file leaves nothing else to check
    problems = _file_key_problems(toml)
    values: dict[str, Any] = {}
    try:
        values["secret_key"] = _load_secret(env, toml)
    except SettingsError as exc:
        problems.append(str(exc))
    defaults = {f.name: f.default for f in fields(Settings)}
    for key, parse in _PARSERS.items():
        raw, from_env = _value_for(key, env, toml)
        if raw is None:
            if defaults[key] is _MISSING:
                problems.append(f"{_describe(key, True)} is missing (or {key} in the config file)")
            continue
        try:
            values[key] = parse(str(raw))
        except ValueError as exc:
            problems.append(f"{_describe(key, from_env)} is invalid: {exc}")
    problems += _bind_problems(values) + _pair_problems(values)
    if problems:
        raise SettingsError(_summary(problems))
    return Settings(**values)


def _summary(problems: list[str]) -> str:
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} settings are missing or invalid:\n  " + "\n  ".join(problems)


def redact_url(url: str) -> str:
    """``url`` with the password of its user part replaced by ``***`` (for printing)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def describe(settings: Settings) -> str:
    """One ``NAME = value`` line per setting, for ``dispatcher check-config``: secrets are
    never shown, URLs lose their password."""
    lines = []
    for item in fields(Settings):
        value = getattr(settings, item.name)
        if isinstance(value, Secret):
            shown = "*** (set)"
        elif isinstance(value, str) and "://" in value:
            shown = redact_url(value)
        else:
            shown = "-" if value is None else str(value)
        lines.append(f"{env_name(item.name):<34} = {shown}")
    return "\n".join(lines)
