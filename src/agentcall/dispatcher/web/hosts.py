"""Which ``Host`` values the D's HTTP port answers (pure), and the ASGI guard that applies it.

A web page on another site can make a browser send requests to the D's loopback port by
pointing its own name at 127.0.0.1 (DNS rebinding); the browser then treats the D's answers
as that site's own and lets the page read them. The request still names the foreign site in
its ``Host`` header, so the D answers only names it knows: the loopback names (``localhost``,
127.0.0.0/8, ``::1``), the address it is bound to (``DISPATCHER_HTTP_HOST``, a wildcard
such as ``0.0.0.0`` included: an address, unlike a name, cannot be pointed elsewhere by a
page's DNS) and the names of ``DISPATCHER_HTTP_ALLOWED_HOSTS``. The port in ``Host`` is not
compared.

- no ``Host``, several, or one that is not a host name or address (with an optional port):
  400 ``bad_host``;
- a well-formed name not allowed: 421 ``misdirected_request`` (the request reached a server
  that does not serve that name), naming the setting that would allow it.

Every answer of the port also carries ``X-Frame-Options: DENY`` and ``nosniff``, and a
Content-Security-Policy: the console's own (``frame-ancestors 'none'`` among its rules) on
its pages, ``default-src 'none'; frame-ancestors 'none'`` on every other answer.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable
from typing import Literal

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")
_PORT = re.compile(r"[0-9]{1,5}")
Verdict = Literal["allowed", "bad_host", "misdirected"]
FRAME_HEADERS = {"x-frame-options": "DENY", "x-content-type-options": "nosniff"}
# for an answer without a policy of its own (JSON, text, assets): nothing runs, no framing
BARE_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"


def normal_host(name: str) -> str | None:
    """``name`` (a host name or an IP address, without port) in the one form compared:
    lower case, no trailing dot, IPv6 without brackets and compressed; None when it is
    neither a host name nor an address."""
    text = name.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
        try:
            return str(ipaddress.IPv6Address(text))
        except ValueError:
            return None
    text = text.removesuffix(".")
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    return text if _NAME.fullmatch(text) else None


def host_of(header: str) -> str | None:
    """The host part of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``),
    normalised; None when the value is malformed."""
    value = header.strip()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, colon, port = value.partition(":")
        rest = f":{port}" if colon else ""
    if rest and not (rest.startswith(":") and _PORT.fullmatch(rest[1:])):
        return None
    return normal_host(name)


def allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names the port answers: loopback, the bound address (or name), and ``extra``
    (already validated by the settings)."""
    names = set(LOOPBACK_NAMES)
    bound = normal_host(bind_host)
    if bound is not None:
        names.add(bound)
    names.update(n for n in (normal_host(e) for e in extra) if n is not None)
    return frozenset(names)


def is_allowed(host: str, allowed: frozenset[str]) -> bool:
    if host in allowed:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback  # all of 127.0.0.0/8
    except ValueError:
        return False


def verdict(headers: list[bytes], allowed: frozenset[str]) -> Verdict:
    """What the port does with a request whose ``Host`` headers are ``headers``."""
    if len(headers) != 1:
        return "bad_host"
    try:
        host = host_of(headers[0].decode("ascii"))
    except UnicodeDecodeError:
        return "bad_host"
    if host is None:
        return "bad_host"
    return "allowed" if is_allowed(host, allowed) else "misdirected"


_REFUSALS: dict[Verdict, tuple[int, str, str, str]] = {
    "bad_host": (
        400,
        "bad_host",
        "the request has no Host header, several, or one that is not a host name",
        "send one Host header naming the D (e.g. localhost:9470)",
    ),
    "misdirected": (
        421,
        "misdirected_request",
        "this D does not answer requests for that Host",
        "use http://localhost:<port>, or add the name to DISPATCHER_HTTP_ALLOWED_HOSTS",
    ),
}


class HostGuard:
    """ASGI middleware: refuses a request whose ``Host`` is not allowed, before any route
    runs, and adds the frame and content-type headers (and, under ``/ui``, the console's
    Content-Security-Policy) to every answer."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in FRAME_HEADERS.items():
                    headers[name] = value
                if "content-security-policy" not in headers:
                    headers["content-security-policy"] = BARE_CSP
            await send(message)

        found = [value for name, value in scope["headers"] if name == b"host"]
        judged = verdict(found, self.allowed)
        if judged == "allowed":
            await self.app(scope, receive, send_guarded)
            return
        status, code, message, hint = _REFUSALS[judged]
        body = json.dumps({"error": {"code": code, "message": message, "hint": hint}}).encode()
        await send_guarded(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send_guarded({"type": "http.response.body", "body": body})
