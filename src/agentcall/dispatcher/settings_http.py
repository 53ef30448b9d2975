"""The settings of the D's HTTP port beyond its address: how long a client may take, how
many connections it may hold, and which ``Host`` names are answered (``DISPATCHER_HTTP_*``).
:class:`agentcall.dispatcher.settings.Settings` has them as its own; see docs/dispatcher.md."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")
MAX_TIMEOUT_S = 600


class HostNames(tuple[str, ...]):
    """Host names, shown as the setting is written (``d1.example.net,10.0.0.5``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return ",".join(self) or "-"


@dataclass(frozen=True, kw_only=True)
class HttpEdgeSettings:
    # A request's line and headers must arrive within this of its first byte: else 408.
    http_header_timeout_s: float = 10.0
    http_body_timeout_s: float = 30.0  # its body, from the end of its headers: else closed
    http_idle_timeout_s: int = 5  # a keep-alive connection without a request is closed
    http_max_connections: int = 100  # beyond: the oldest idle or slow one out, else 503
    # Host names answered besides loopback and the bound address (DNS rebinding guard).
    http_allowed_hosts: HostNames = HostNames()


def _number(raw: str, kind: Callable[[str], float], low: float, high: float, what: str) -> Any:
    try:
        value = kind(raw.strip())
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise ValueError(f"must be {what}, not {raw!r}")
    return value


def _timeout(raw: str) -> float:
    what = f"a number of seconds > 0 and <= {MAX_TIMEOUT_S}"
    value = _number(raw, float, 0, MAX_TIMEOUT_S, what)
    if value == 0:
        raise ValueError(f"must be {what}, not {raw!r}")
    return float(value)


def _whole_seconds(raw: str) -> int:
    return int(_number(raw, int, 1, MAX_TIMEOUT_S, f"a whole number of seconds 1..{MAX_TIMEOUT_S}"))


def _connections(raw: str) -> int:
    return int(_number(raw, int, 1, 65_535, "an integer 1..65535"))


def _host(entry: str) -> str:
    name = entry.strip().lower().removesuffix(".")
    try:
        return str(ipaddress.ip_address(name.removeprefix("[").removesuffix("]")))
    except ValueError:
        pass
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"{entry.strip()!r} is not a host name or IP address (write names without scheme,"
            " port, path or wildcard, separated by commas: d1.example.net,10.0.0.5)"
        )
    return name


def _hosts(raw: str) -> HostNames:
    entries = [entry for entry in raw.split(",") if entry.strip()]
    return HostNames(dict.fromkeys(_host(entry) for entry in entries))


HTTP_EDGE_PARSERS: dict[str, Callable[[str], Any]] = {
    "http_header_timeout_s": _timeout,
    "http_body_timeout_s": _timeout,
    "http_idle_timeout_s": _whole_seconds,
    "http_max_connections": _connections,
    "http_allowed_hosts": _hosts,
}
