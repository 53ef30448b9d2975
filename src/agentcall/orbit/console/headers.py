"""The security headers of every console answer: a strict Content-Security-Policy (own
scripts, styles and images only; forms post only to the console; no framing), frame denial
for old browsers, no MIME sniffing, no caching, and a referrer only within the console's own
origin: `same-origin`, not `no-referrer`, because under `no-referrer` a browser sends
`Origin: null` even on the console's own form posts, which the same-origin check refuses."""

from __future__ import annotations

HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
