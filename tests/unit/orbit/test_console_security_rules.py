"""Pure rules of the console's edge and sessions (docs/orbit/console.md): the `Host` check,
the proxies believed about the original scheme and host, the same-origin check of every POST,
the sign-in form's token, a session's expiry, and the strength of a configured token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.console.edge import forwarded, host_allowed, host_name, networks, trusted
from agentcall.orbit.console.session import (
    cross_site,
    csrf_token,
    new_signin_nonce,
    origin_of,
    signin_ok,
    signin_token,
)
from agentcall.orbit.domain.sessions import (
    SessionRow,
    SessionTimes,
    Verdict,
    expires_at,
    is_session_id,
    new_session_id,
    session_digest,
    verdict,
)
from agentcall.orbit.domain.tokens import generate_secret, secret_weakness

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("127.0.0.1:7470", "127.0.0.1"),
        ("LOCALHOST", "localhost"),
        ("localhost.", "localhost"),
        ("[::1]:7470", "::1"),
        ("[0:0::1]", "::1"),
        ("orbit.example.com", "orbit.example.com"),
        ("", None),
        ("a b", None),
        ("host:port", None),
        ("host:123456", None),
        ("[::1", None),
        ("[not-v6]:80", None),
        ("::1", None),  # an IPv6 address without brackets
        ("evil.com/x", None),
        ("user@host", None),
    ],
)
def test_host_values_are_parsed_or_refused(value: str, name: str | None) -> None:
    assert host_name(value) == name


@pytest.mark.parametrize(
    ("name", "allowed", "answer"),
    [
        ("localhost", (), True),
        ("127.0.0.1", (), True),
        ("::1", (), True),
        ("rebind.localhost", (), False),  # a name chromium resolves to loopback
        ("attacker.example", (), False),
        ("10.0.0.7", (), False),
        ("orbit.example.com", ("orbit.example.com",), True),
        ("orbit.example.com", (".example.com",), True),
        ("example.com", (".example.com",), True),
        ("badexample.com", (".example.com",), False),
        ("anything", ("*",), True),
    ],
)
def test_the_console_answers_only_allowed_hosts(
    name: str, allowed: tuple[str, ...], answer: bool
) -> None:
    assert host_allowed(name, allowed) is answer


@pytest.mark.parametrize(
    ("peer", "cidrs", "answer"),
    [
        ("127.0.0.1", (), False),  # nobody is believed by default
        ("127.0.0.1", ("127.0.0.1/32",), True),
        ("10.1.2.3", ("10.0.0.0/8",), True),
        ("11.1.2.3", ("10.0.0.0/8",), False),
        ("::1", ("::1/128",), True),
        ("::1", ("127.0.0.1/32",), False),
        (None, ("0.0.0.0/0",), False),
        ("not-an-address", ("0.0.0.0/0",), False),
    ],
)
def test_only_listed_proxies_are_trusted(
    peer: str | None, cidrs: tuple[str, ...], answer: bool
) -> None:
    assert trusted(peer, networks(cidrs)) is answer


@pytest.mark.parametrize(
    ("headers", "scheme", "wanted_scheme", "wanted_host"),
    [
        ([(b"host", b"backend:7470")], "http", "http", b"backend:7470"),
        ([(b"x-forwarded-proto", b"https")], "http", "https", None),
        ([(b"x-forwarded-proto", b"http, https")], "http", "https", None),  # the last hop's
        ([(b"x-forwarded-proto", b"https, http")], "http", "http", None),
        ([(b"x-forwarded-proto", b"gopher")], "http", "http", None),
        ([(b"x-forwarded-proto", b"https")], "ws", "wss", None),
        (
            [(b"host", b"backend:7470"), (b"x-forwarded-host", b"orbit.example.com")],
            "http",
            "http",
            b"orbit.example.com",
        ),
    ],
)
def test_a_trusted_proxy_tells_the_original_scheme_and_host(
    headers: list[tuple[bytes, bytes]], scheme: str, wanted_scheme: str, wanted_host: bytes | None
) -> None:
    got_scheme, got_headers = forwarded(headers, scheme)
    assert got_scheme == wanted_scheme
    hosts = [value for name, value in got_headers if name == b"host"]
    assert hosts == ([] if wanted_host is None else [wanted_host])


@pytest.mark.parametrize(
    ("origin", "fetch_site", "scheme", "host", "refused"),
    [
        (None, None, "http", "127.0.0.1:7470", False),  # a command-line client
        ("http://127.0.0.1:7470", "same-origin", "http", "127.0.0.1:7470", False),
        ("https://orbit.example.com", None, "https", "orbit.example.com", False),
        ("https://orbit.example.com:443", None, "https", "orbit.example.com", False),
        ("http://127.0.0.1:7470", "none", "http", "127.0.0.1:7470", False),
        ("http://127.0.0.1:8000", None, "http", "127.0.0.1:7470", True),  # another port
        ("http://localhost:7470", None, "http", "127.0.0.1:7470", True),
        ("https://127.0.0.1:7470", None, "http", "127.0.0.1:7470", True),
        ("null", None, "http", "127.0.0.1:7470", True),
        ("garbage", None, "http", "127.0.0.1:7470", True),
        (None, "cross-site", "http", "127.0.0.1:7470", True),
        (None, "same-site", "http", "127.0.0.1:7470", True),
        ("http://127.0.0.1:7470", "cross-site", "http", "127.0.0.1:7470", True),
    ],
)
def test_posts_from_another_site_or_origin_are_refused(
    origin: str | None, fetch_site: str | None, scheme: str, host: str, refused: bool
) -> None:
    assert (cross_site(origin, fetch_site, scheme, host) is not None) is refused


def test_origins_fill_in_default_ports() -> None:
    assert origin_of("HTTPS://Orbit.Example.com") == ("https", "orbit.example.com", 443)
    assert origin_of("http://[::1]:7470") == ("http", "::1", 7470)
    assert origin_of("ftp://x") is None
    assert origin_of("http://x:99999") is None


def test_the_signin_token_belongs_to_its_pre_session_cookie() -> None:
    nonce, other = new_signin_nonce(), new_signin_nonce()
    assert signin_ok(nonce, signin_token(nonce))
    assert not signin_ok(other, signin_token(nonce))  # another browser's form
    assert not signin_ok(None, signin_token(nonce))  # no pre-session cookie
    assert not signin_ok(nonce, None)
    assert not signin_ok("", signin_token(""))
    assert not signin_ok(nonce, csrf_token(nonce))  # a session's CSRF token is not one


TIMES = SessionTimes(idle=timedelta(minutes=30), absolute=timedelta(hours=12))


@pytest.mark.parametrize(
    ("seen_ago", "expires_in", "wanted"),
    [
        (timedelta(seconds=5), timedelta(hours=1), Verdict.LIVE),
        (timedelta(seconds=61), timedelta(hours=1), Verdict.TOUCH),
        (timedelta(minutes=29), timedelta(hours=1), Verdict.TOUCH),
        (timedelta(minutes=30), timedelta(hours=1), Verdict.DEAD),  # idle
        (timedelta(seconds=5), timedelta(0), Verdict.DEAD),  # absolute expiry
        (timedelta(seconds=5), -timedelta(seconds=1), Verdict.DEAD),
    ],
)
def test_a_session_ends_when_idle_or_at_its_expiry(
    seen_ago: timedelta, expires_in: timedelta, wanted: Verdict
) -> None:
    row = SessionRow("t" * 32, NOW - timedelta(hours=1), NOW - seen_ago, NOW + expires_in)
    assert verdict(row, NOW, TIMES) is wanted


def test_a_session_never_outlives_its_token() -> None:
    assert expires_at(NOW, TIMES, None) == NOW + timedelta(hours=12)
    assert expires_at(NOW, TIMES, NOW + timedelta(hours=1)) == NOW + timedelta(hours=1)


def test_session_ids_are_random_and_only_their_digest_is_kept() -> None:
    first, second = new_session_id(), new_session_id()
    assert first != second and is_session_id(first) and is_session_id(second)
    assert len(session_digest(first)) == 64 and first not in session_digest(first)
    for bad in (None, "", "x" * 42, "x" * 44, "x" * 42 + "!", generate_secret()):
        assert not is_session_id(bad)


@pytest.mark.parametrize(
    ("secret", "weak"),
    [
        ("a" * 16, True),  # sixteen identical characters
        ("orb_" + "a" * 43, True),
        ("orb_" + "ab" * 22, True),
        ("orb_" + "0123456789abcdef" * 2, False),  # 32 hex digits: 128 bits
        ("orb_" + "0123456789abcde" * 2, True),  # 30 characters
        ("orb_" + "0123456789abcdef" + "0" * 16, True),  # half of it repeats one digit
    ],
)
def test_configured_tokens_need_length_and_entropy(secret: str, weak: bool) -> None:
    assert (secret_weakness(secret) is not None) is weak


def test_every_issued_token_is_strong() -> None:
    assert all(secret_weakness(generate_secret()) is None for _ in range(2000))
