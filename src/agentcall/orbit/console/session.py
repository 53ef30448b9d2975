"""The console's cookie, CSRF and same-origin rules (pure; docs/orbit/console.md).

`orbit_session` holds a random session id (`agentcall.orbit.domain.sessions`), never the API token:
HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), Path=/ui,
Secure whenever the browser's scheme is HTTPS (behind a trusted proxy too). Each form carries
a CSRF token derived from the session id (HMAC-SHA-256 keyed by it): a page of another origin
can neither read nor compute it, and it needs no server-side state beyond the session.

The sign-in form has no session yet: it carries a token derived the same way from a random
pre-session cookie (`orbit_signin`, Path=/ui/signin) that the form's page sets. A page of
another site can post the form but not send that cookie nor know the token, so it cannot sign
a browser into another namespace. Every POST is also refused when the browser says it comes
from another site (`Sec-Fetch-Site`) or another origin (`Origin`)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

COOKIE = "orbit_session"
PATH = "/ui"
SIGNIN_COOKIE = "orbit_signin"
SIGNIN_PATH = "/ui/signin"
SIGNIN_MAX_AGE_S = 3600
_CSRF_LABEL = b"orbit-console-csrf-v2"
_SIGNIN_LABEL = b"orbit-console-signin-v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def csrf_token(session_id: str) -> str:
    return hmac.new(session_id.encode("utf-8"), _CSRF_LABEL, hashlib.sha256).hexdigest()


def csrf_ok(session_id: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(csrf_token(session_id), given)


def new_signin_nonce() -> str:
    return secrets.token_urlsafe(32)


def signin_token(nonce: str) -> str:
    return hmac.new(nonce.encode("utf-8"), _SIGNIN_LABEL, hashlib.sha256).hexdigest()


def signin_ok(nonce: str | None, given: str | None) -> bool:
    """The sign-in form's token matches the pre-session cookie of the same browser."""
    if not nonce or given is None or len(nonce) > 128:
        return False
    return hmac.compare_digest(signin_token(nonce), given)


def cookie_attributes(secure: bool) -> dict[str, object]:
    return {"httponly": True, "samesite": "strict", "path": PATH, "secure": secure}


def origin_of(text: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin or URL, the port filled in; None when it is not an
    http(s) origin (`null`, garbage)."""
    try:
        parts = urlsplit(text.strip())
        scheme, host, port = parts.scheme.lower(), (parts.hostname or ""), parts.port
    except ValueError:
        return None
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    return scheme, host.lower(), port or _DEFAULT_PORTS[scheme]


def cross_site(origin: str | None, fetch_site: str | None, scheme: str, host: str) -> str | None:
    """Why a POST is refused as coming from another site, or None. `scheme` and `host` (the
    `Host` value, with its port if any) are the console's as the browser sees them. A request
    with neither header (a command-line client, an old browser) still needs its CSRF token."""
    site = None if fetch_site is None else fetch_site.strip().lower()
    if site is not None and site not in ("same-origin", "none"):
        other = "origin" if site == "same-site" else "site"
        return f"the request comes from another {other} (Sec-Fetch-Site: {site[:32]})"
    if origin is None:
        return None
    own = origin_of(f"{scheme}://{host}")
    if own is None or origin_of(origin) != own:
        return "the request comes from another origin than the console's"
    return None
