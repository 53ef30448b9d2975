"""The security headers of every console answer: a strict Content-Security-Policy (own
scripts, styles and images only; forms post only to the console; no framing), frame denial
for old browsers, no MIME sniffing, no caching, and a referrer only within the console's own
origin: `same-origin`, not `no-referrer`, because under `no-referrer` a browser sends
`Origin: null` even on the console's own form posts, which the same-origin check refuses.

`secured` adds them to every answer under `/ui` the app sends without them (a redirect of the
router, a 404 or 405, a static asset): `console.edge.ConsoleEdge` wraps each console request
with it."""

from __future__ import annotations

from starlette.types import Message, Send

HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_ENCODED = [
    (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in HEADERS.items()
]


def secured(send: Send) -> Send:
    """`send` with each of `HEADERS` added to the answer's start when it lacks that header."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            present = {name.lower() for name, _ in headers}
            headers += [(name, value) for name, value in _ENCODED if name not in present]
            message = {**message, "headers": headers}
        await send(message)

    return sending
