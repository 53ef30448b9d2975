"""HTTP digest authentication for SIP (RFC 3261 §22, RFC 2617, RFC 8760).

Pure: parse a ``WWW-Authenticate``/``Proxy-Authenticate`` challenge and compute
the matching ``Authorization``/``Proxy-Authorization`` value. Algorithms MD5,
MD5-sess, SHA-256 and SHA-256-sess; qop ``auth`` or none (``auth-int`` is
refused: a UAC that cannot hash the body honestly must not pretend).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from agentcall.cell.domain.errors import SipAuthError

_HASHES = {"MD5": "md5", "SHA-256": "sha256"}


@dataclass(frozen=True)
class Challenge:
    realm: str
    nonce: str
    algorithm: str = "MD5"
    qop: tuple[str, ...] = ()
    opaque: str | None = None
    stale: bool = False


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str

    def __repr__(self) -> str:  # never print the password
        return f"Credentials(username={self.username!r}, password=***)"


def _split_params(text: str) -> dict[str, str]:
    """``a="x, y", b=z`` -> {"a": "x, y", "b": "z"} (commas inside quotes kept)."""
    params: dict[str, str] = {}
    key, value, in_quotes, reading_key = "", "", False, True
    for ch in text + ",":
        if reading_key:
            if ch == "=":
                reading_key = False
            elif ch != ",":
                key += ch
            continue
        if ch == '"':
            in_quotes = not in_quotes
        elif ch == "," and not in_quotes:
            if key.strip():
                params[key.strip().lower()] = value.strip().strip('"')
            key, value, reading_key = "", "", True
        else:
            value += ch
    return params


def parse_challenge(header_value: str) -> Challenge:
    """Parse ``Digest realm="...", nonce="...", ...``; raises SipAuthError if unusable."""
    scheme, _, rest = header_value.strip().partition(" ")
    if scheme.lower() != "digest":
        raise SipAuthError(f"authentication scheme {scheme!r} is not supported (only Digest)")
    params = _split_params(rest)
    if "realm" not in params or "nonce" not in params:
        raise SipAuthError("digest challenge lacks realm or nonce")
    algorithm = params.get("algorithm", "MD5")
    base = algorithm.upper().removesuffix("-SESS")
    if base not in _HASHES:
        raise SipAuthError(f"digest algorithm {algorithm!r} is not supported")
    qop = tuple(q.strip().lower() for q in params.get("qop", "").split(",") if q.strip())
    if qop and "auth" not in qop:
        raise SipAuthError(f"digest qop {','.join(qop)!r} is not supported (only auth)")
    return Challenge(
        realm=params["realm"],
        nonce=params["nonce"],
        algorithm=algorithm,
        qop=qop,
        opaque=params.get("opaque"),
        stale=params.get("stale", "").lower() == "true",
    )


def _h(algorithm: str, text: str) -> str:
    name = _HASHES[algorithm.upper().removesuffix("-SESS")]
    return hashlib.new(name, text.encode("utf-8")).hexdigest()


def digest_response(
    challenge: Challenge,
    credentials: Credentials,
    method: str,
    uri: str,
    *,
    cnonce: str,
    nonce_count: int = 1,
) -> str:
    """The ``response`` hash (RFC 2617 §3.2.2.1)."""
    alg = challenge.algorithm
    ha1 = _h(alg, f"{credentials.username}:{challenge.realm}:{credentials.password}")
    if alg.upper().endswith("-SESS"):
        ha1 = _h(alg, f"{ha1}:{challenge.nonce}:{cnonce}")
    ha2 = _h(alg, f"{method}:{uri}")
    if "auth" in challenge.qop:
        nc = f"{nonce_count:08x}"
        return _h(alg, f"{ha1}:{challenge.nonce}:{nc}:{cnonce}:auth:{ha2}")
    return _h(alg, f"{ha1}:{challenge.nonce}:{ha2}")


def authorization(
    challenge: Challenge,
    credentials: Credentials,
    method: str,
    uri: str,
    *,
    cnonce: str,
    nonce_count: int = 1,
) -> str:
    """The value of the ``Authorization`` or ``Proxy-Authorization`` header."""
    response = digest_response(
        challenge, credentials, method, uri, cnonce=cnonce, nonce_count=nonce_count
    )
    parts = [
        f'username="{credentials.username}"',
        f'realm="{challenge.realm}"',
        f'nonce="{challenge.nonce}"',
        f'uri="{uri}"',
        f'response="{response}"',
        f"algorithm={challenge.algorithm}",
    ]
    if "auth" in challenge.qop:
        parts += ["qop=auth", f"nc={nonce_count:08x}", f'cnonce="{cnonce}"']
    if challenge.opaque is not None:
        parts.append(f'opaque="{challenge.opaque}"')
    return "Digest " + ", ".join(parts)
