"""Digest authentication (RFC 2617 / RFC 8760) computed against known vectors."""

from __future__ import annotations

import hashlib

import pytest

from agentcall.cell.domain.errors import SipAuthError
from agentcall.cell.sip.digest import (
    Challenge,
    Credentials,
    authorization,
    digest_response,
    parse_challenge,
)

CREDS = Credentials("Mufasa", "Circle Of Life")


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def test_rfc2617_example_vector() -> None:
    """RFC 2617 §3.5: the published response for Mufasa (qop=auth, MD5)."""
    ch = Challenge(
        realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", qop=("auth",)
    )
    got = digest_response(ch, CREDS, "GET", "/dir/index.html", cnonce="0a4f113b", nonce_count=1)
    assert got == "6629fae49393a05397450978507c4ef1"


@pytest.mark.parametrize(
    ("algorithm", "qop", "expected_fn"),
    [
        (
            "MD5",
            (),
            lambda: _md5(f"{_md5('Mufasa:r:Circle Of Life')}:n:{_md5('INVITE:sip:1@h')}"),
        ),
        (
            "MD5-sess",
            ("auth",),
            lambda: _md5(
                f"{_md5(_md5('Mufasa:r:Circle Of Life') + ':n:c')}:n:00000002:c:auth:"
                f"{_md5('INVITE:sip:1@h')}"
            ),
        ),
        (
            "SHA-256",
            ("auth",),
            lambda: hashlib.sha256(
                (
                    hashlib.sha256(b"Mufasa:r:Circle Of Life").hexdigest()
                    + ":n:00000002:c:auth:"
                    + hashlib.sha256(b"INVITE:sip:1@h").hexdigest()
                ).encode()
            ).hexdigest(),
        ),
    ],
)
def test_algorithms(algorithm: str, qop: tuple[str, ...], expected_fn: object) -> None:
    ch = Challenge(realm="r", nonce="n", algorithm=algorithm, qop=qop)
    got = digest_response(ch, CREDS, "INVITE", "sip:1@h", cnonce="c", nonce_count=2)
    assert callable(expected_fn)
    assert got == expected_fn()


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            'Digest realm="sip.example", nonce="abc", qop="auth,auth-int", opaque="o1"',
            Challenge(realm="sip.example", nonce="abc", qop=("auth", "auth-int"), opaque="o1"),
        ),
        (
            'Digest realm="a, b", nonce="x", algorithm=SHA-256, stale=TRUE',
            Challenge(realm="a, b", nonce="x", algorithm="SHA-256", stale=True),
        ),
        ('digest nonce="n",realm="r"', Challenge(realm="r", nonce="n")),
    ],
)
def test_parse_challenge(header: str, expected: Challenge) -> None:
    assert parse_challenge(header) == expected


@pytest.mark.parametrize(
    "header",
    [
        'Basic realm="x"',
        'Digest nonce="n"',
        'Digest realm="r", nonce="n", algorithm=SHA-512-256',
        'Digest realm="r", nonce="n", qop="auth-int"',
    ],
)
def test_unusable_challenges_are_refused(header: str) -> None:
    with pytest.raises(SipAuthError):
        parse_challenge(header)


def test_authorization_header_carries_qop_fields_and_hides_password() -> None:
    ch = Challenge(realm="r", nonce="n", qop=("auth",), opaque="op")
    value = authorization(ch, CREDS, "INVITE", "sip:1@h", cnonce="cn")
    assert value.startswith('Digest username="Mufasa", realm="r", nonce="n", uri="sip:1@h"')
    assert 'qop=auth, nc=00000001, cnonce="cn"' in value and 'opaque="op"' in value
    assert "Circle" not in value and "Circle" not in repr(CREDS)
