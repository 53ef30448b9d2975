"""Parsers of the Dispatcher's settings that need more than a type: URLs parsed whole, port
numbers, the console token's strength. Each returns the value or raises ``ValueError``
with one sentence saying what a valid value looks like (``settings`` names the setting).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from urllib.parse import urlsplit

MIN_TOKEN_CHARS = 16
MIN_TOKEN_DISTINCT = 8
MIN_TOKEN_BITS = 48.0


def port(raw: str) -> int:
    """A TCP port to listen on: 0..65535 (0 = any free port)."""
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(
            f"must be an integer port 0..65535 (0 = any free port), not {raw!r}"
        ) from None
    if not 0 <= value <= 65535:
        raise ValueError(f"must be an integer port 0..65535 (0 = any free port), not {value}")
    return value


def _url_problem(raw: str, schemes: tuple[str, ...]) -> str | None:
    if not raw.isprintable() or any(ch.isspace() for ch in raw):
        return "contains spaces or control characters"
    parts = urlsplit(raw)
    if parts.scheme not in schemes:
        return f"the scheme must be {'/'.join(schemes)}, not {parts.scheme or 'missing'!r}"
    if not parts.hostname:
        return "the host is missing"
    try:
        number = parts.port
    except ValueError:
        return "the port must be a number 1..65535"  # not echoed: it may be a password
    if number == 0:
        return "the port must be a number 1..65535, not 0"
    if parts.scheme.startswith("http") and (parts.query or parts.fragment):
        return "a query or fragment is not allowed"
    return None


def url(*schemes: str) -> Callable[[str], str]:
    """A URL with one of ``schemes``, a host and, if given, a numeric port 1..65535."""

    def parse(raw: str) -> str:
        problem = _url_problem(raw, schemes)
        if problem is not None:
            shape = f"{'|'.join(schemes)}://host[:port][/path]"
            raise ValueError(f"must be a URL {shape}: {problem}")
        return raw.rstrip("/") if raw.startswith("http") else raw

    return parse


def token_bits(raw: str) -> float:
    """The token's entropy estimated from its own characters: length x Shannon entropy of
    their frequencies (sixteen identical characters: 0 bits)."""
    counts = Counter(raw)
    total = len(raw)
    per_char = -sum(n / total * math.log2(n / total) for n in counts.values()) if raw else 0.0
    return total * per_char


def token_problem(raw: str) -> str | None:
    """Why ``raw`` is too weak a console token, or ``None`` (pure)."""
    if len(raw) < MIN_TOKEN_CHARS:
        return f"is {len(raw)} characters long; use at least {MIN_TOKEN_CHARS}"
    if not raw.isprintable() or " " in raw:
        return "must be printable characters without spaces"
    if len(set(raw)) < MIN_TOKEN_DISTINCT:
        return f"uses {len(set(raw))} distinct characters; use at least {MIN_TOKEN_DISTINCT}"
    if token_bits(raw) < MIN_TOKEN_BITS:
        return f"has about {token_bits(raw):.0f} bits of entropy; use at least {MIN_TOKEN_BITS:.0f}"
    return None
