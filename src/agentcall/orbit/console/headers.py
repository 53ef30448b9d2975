"""The security headers of every console answer: a strict Content-Security-Policy (own
scripts, styles and images only; forms post only to the console; no framing), frame denial
for old browsers, no MIME sniffing, no referrer, no caching."""

from __future__ import annotations

HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
