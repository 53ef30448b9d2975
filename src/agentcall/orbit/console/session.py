"""The console's session and CSRF rules (pure).

The session cookie holds the API token the operator signed in with: HttpOnly (no script
reads it), SameSite=Strict (no other site's page sends it), Path=/ui, Secure over HTTPS.
Every request authenticates it again like an API request, so an expired or revoked token
signs the console out within the token cache's age. Each form carries a CSRF token derived
from the session (HMAC-SHA-256 keyed by the token): a page of another origin can neither
read it nor compute it, and it needs no server-side state, so it works across server
processes."""

from __future__ import annotations

import hashlib
import hmac

COOKIE = "orbit_session"
PATH = "/ui"
_CSRF_LABEL = b"orbit-console-csrf-v1"


def csrf_token(secret: str) -> str:
    return hmac.new(secret.encode("utf-8"), _CSRF_LABEL, hashlib.sha256).hexdigest()


def csrf_ok(secret: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(csrf_token(secret), given)


def cookie_attributes(secure: bool) -> dict[str, object]:
    return {"httponly": True, "samesite": "strict", "path": PATH, "secure": secure}
