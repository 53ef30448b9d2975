"""Who may read the console (pure): with ``DISPATCHER_CONSOLE_TOKEN`` set, a request must
carry it as ``Authorization: Bearer <token>`` or as the password of HTTP basic auth (any
user name, so that a browser can ask for it); without it (a loopback bind), anyone who
reaches the port may read."""

from __future__ import annotations

import base64
import binascii
import hmac

CHALLENGE = 'Basic realm="dispatcher console", charset="UTF-8"'


def _basic_password(credentials: str) -> str | None:
    try:
        decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    return password if colon else None


def presented(header: str | None) -> str | None:
    """The token an ``Authorization`` header presents, None when it presents none."""
    if not header:
        return None
    scheme, _, credentials = header.strip().partition(" ")
    credentials = credentials.strip()
    if scheme.lower() == "bearer":
        return credentials or None
    if scheme.lower() == "basic":
        return _basic_password(credentials)
    return None


def allowed(token: str | None, header: str | None) -> bool:
    """Whether a request with ``header`` may read (compared in constant time)."""
    if token is None:
        return True
    given = presented(header)
    return given is not None and hmac.compare_digest(given.encode(), token.encode())
