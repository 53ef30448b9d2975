"""The console's edge in front of the whole app (docs/orbit/console.md "Host names and
proxies"): the original scheme and host told by a trusted proxy, and the `Host` check.

Only a peer inside `trusted_proxies` (CIDRs; none by default) is believed about
`X-Forwarded-Proto`, `X-Forwarded-Host` and `X-Forwarded-For` (the last value of each: the one
the nearest proxy set); the request then carries them as its scheme, `Host` and client
address (the audit log's remote address), so cookies are Secure and
same-origin checks compare what the browser used. The console (`/ui`) answers only the
loopback names and `allowed_hosts`: a foreign name (DNS rebinding: another site's name
resolved to this server) gets 421, a missing or malformed `Host` 400; every console answer
gets the security headers (`headers.secured`). The API, `/healthz`
and `/metrics` answer any `Host`: the API authenticates every request by its bearer token and
never by anything a browser sends on its own."""

from __future__ import annotations

import ipaddress
import re

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from agentcall.orbit.console.headers import HEADERS, secured

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_NAME = re.compile(r"[a-z0-9]([a-z0-9_-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9_-]*[a-z0-9])?)*\.?")
_PORT = re.compile(r"[0-9]{1,5}")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def host_name(value: str) -> str | None:
    """The name (or address) of a `Host` value, lower case and without its port; None when
    the value is malformed."""
    text = value.strip().lower()
    if text.startswith("["):
        name, bracket, port = text[1:].partition("]")
        if not bracket or (port and not (port[0] == ":" and _PORT.fullmatch(port[1:]))):
            return None
        try:
            return str(ipaddress.IPv6Address(name))
        except ValueError:
            return None
    name, colon, port = text.partition(":")
    if colon and not _PORT.fullmatch(port):
        return None
    if not _NAME.fullmatch(name) or len(name) > 254:
        return None
    return name.rstrip(".")


def host_allowed(name: str, allowed: tuple[str, ...]) -> bool:
    """A loopback name, a listed name, or a name under a listed `.suffix`; `*`: any."""
    if name in LOOPBACK_NAMES:
        return True
    for pattern in allowed:
        if pattern in ("*", name):
            return True
        if pattern.startswith(".") and (name == pattern[1:] or name.endswith(pattern)):
            return True
    return False


def networks(cidrs: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def trusted(peer: str | None, proxies: tuple[Network, ...]) -> bool:
    if peer is None or not proxies:
        return False
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in proxies)


def last_value(raw: bytes) -> str:
    return raw.decode("latin-1").rpartition(",")[2].strip()


def forwarded(
    headers: list[tuple[bytes, bytes]], scheme: str
) -> tuple[str, list[tuple[bytes, bytes]]]:
    """The scheme and headers of a request a trusted proxy forwarded: its `X-Forwarded-Proto`
    (http/https, ws/wss on a WebSocket) and `X-Forwarded-Host` (in place of `Host`)."""
    websocket = scheme in ("ws", "wss")
    host: bytes | None = None
    for name, value in headers:
        if name == b"x-forwarded-proto":
            proto = last_value(value).lower()
            if proto in ("http", "https"):
                scheme = {"http": "ws", "https": "wss"}[proto] if websocket else proto
        elif name == b"x-forwarded-host" and last_value(value):
            host = last_value(value).encode("latin-1")
    if host is None:
        return scheme, headers
    return scheme, [(n, v) for n, v in headers if n != b"host"] + [(b"host", host)]


def forwarded_for(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The last `X-Forwarded-For` address (the one the nearest proxy added), if valid."""
    values = [value for name, value in headers if name == b"x-forwarded-for"]
    if not values:
        return None
    text = last_value(values[-1])
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def console_path(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


class ConsoleEdge:
    """ASGI middleware: `forwarded` for trusted peers, then the console's `Host` check."""

    def __init__(
        self, app: ASGIApp, allowed_hosts: tuple[str, ...], trusted_proxies: tuple[str, ...]
    ) -> None:
        self.app = app
        self.allowed = allowed_hosts
        self.proxies = networks(trusted_proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            client = scope.get("client")
            if self.proxies and trusted(client[0] if client else None, self.proxies):
                scheme, headers = forwarded(list(scope["headers"]), scope["scheme"])
                scope = {**scope, "scheme": scheme, "headers": headers}
                peer = forwarded_for(headers)
                if peer is not None:  # the client the nearest proxy saw (the audit log's)
                    scope["client"] = (peer, 0)
            if scope["type"] == "http" and console_path(scope["path"]):
                refusal = self.refusal(scope)
                if refusal is not None:
                    await refusal(scope, receive, send)
                    return
                await self.app(scope, receive, secured(send))  # every answer: the headers
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> PlainTextResponse | None:
        values = [value for name, value in scope["headers"] if name == b"host"]
        name = host_name(values[0].decode("latin-1")) if len(values) == 1 else None
        if name is None:
            return PlainTextResponse("send one valid Host header", 400, headers=HEADERS)
        if host_allowed(name, self.allowed):
            return None
        message = (
            f"this console does not answer the host name {name[:64]!r}; "
            "its operator can add it to ORBIT_ALLOWED_HOSTS"
        )
        return PlainTextResponse(message, 421, headers=HEADERS)
