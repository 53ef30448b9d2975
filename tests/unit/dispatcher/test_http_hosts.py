"""The D's HTTP port answers only allowed ``Host`` names (a page on another site that points
its name at 127.0.0.1, DNS rebinding, must not read the console), and every answer forbids
framing; the settings that bound the port are validated at start, one line per bad value."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agentcall.dispatcher.settings import SettingsError, describe, load_settings
from agentcall.dispatcher.web.app import build_app
from agentcall.dispatcher.web.edge import connection_limit
from agentcall.dispatcher.web.hosts import allowed_hosts, host_of, verdict

from .test_settings import ENV

pytestmark = pytest.mark.unit
DEFAULT = allowed_hosts("127.0.0.1")


@pytest.mark.parametrize(
    ("header", "host"),
    [
        ("localhost", "localhost"),
        ("LocalHost:9470", "localhost"),
        ("localhost.:9470", "localhost"),
        ("127.0.0.1:9470", "127.0.0.1"),
        ("[::1]:9470", "::1"),
        ("[0:0::1]", "::1"),
        ("d1.example.net", "d1.example.net"),
        ("", None),
        ("localhost:", None),
        ("localhost:abc", None),
        ("localhost:9470:1", None),
        ("[::1", None),
        ("[::1]x", None),
        ("[evil.test]:80", None),
        ("evil test", None),
        ("evil.test/ui", None),
        ("user@localhost", None),
        ("a" * 64 + ".test", None),
    ],
)
def test_a_host_header_is_read_to_its_name_or_refused(header: str, host: str | None) -> None:
    assert host_of(header) == host


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([b"localhost:9470"], "allowed"),
        ([b"127.0.0.1:9470"], "allowed"),
        ([b"127.8.9.10"], "allowed"),  # all of 127.0.0.0/8 is loopback
        ([b"[::1]:9470"], "allowed"),
        ([b"rebind.example.com:9470"], "misdirected"),
        ([b"localhost.rebind.example.com"], "misdirected"),
        ([b"10.0.0.5:9470"], "misdirected"),
        ([b"0.0.0.0:9470"], "misdirected"),
        ([], "bad_host"),
        ([b"localhost", b"localhost"], "bad_host"),
        ([b"local\xffhost"], "bad_host"),
        ([b"localhost:99x"], "bad_host"),
    ],
)
def test_only_loopback_names_are_answered_by_default(headers: list[bytes], expected: str) -> None:
    assert verdict(headers, DEFAULT) == expected


@pytest.mark.parametrize(
    ("bind", "extra", "answered", "refused"),
    [
        ("127.0.0.1", (), "localhost", "10.0.0.5"),
        ("10.0.0.5", (), "10.0.0.5", "d1.example.net"),  # the address the D is bound to
        ("0.0.0.0", (), "0.0.0.0:9470", "10.0.0.5"),  # dispatcher status's default URL
        ("::", ("d1.example.net",), "d1.example.net", "d2.example.net"),
        ("0.0.0.0", ("fe80::1",), "[fe80::1]:9470", "[fe80::2]"),
    ],
)
def test_the_bound_address_and_the_setting_add_names(
    bind: str, extra: tuple[str, ...], answered: str, refused: str
) -> None:
    allowed = allowed_hosts(bind, extra)
    assert verdict([answered.encode()], allowed) == "allowed"
    assert verdict([refused.encode()], allowed) == "misdirected"


async def _get(host: str | None, path: str = "/healthz") -> httpx.Response:
    async def snapshot() -> dict[str, Any]:
        return {"readiness": {"ready": True, "causes": []}}

    transport = httpx.ASGITransport(app=build_app(snapshot, lambda: True))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        request = client.build_request("GET", path)
        if host is None:
            del request.headers["host"]
        else:
            request.headers["host"] = host
        return await client.send(request)


@pytest.mark.parametrize(
    ("host", "status", "code"),
    [
        ("rebind.example.com:9470", 421, "misdirected_request"),
        ("evil test", 400, "bad_host"),
        (None, 400, "bad_host"),
    ],
)
async def test_a_foreign_or_broken_host_is_refused_before_any_route(
    host: str | None, status: int, code: str
) -> None:
    for path in ("/status", "/readyz", "/ui", "/nowhere"):
        answer = await _get(host, path)
        assert answer.status_code == status, path
        assert answer.json()["error"]["code"] == code
        assert answer.headers["x-frame-options"] == "DENY"
    assert "DISPATCHER_HTTP_ALLOWED_HOSTS" in (await _get("rebind.example.com")).text


async def test_every_answer_forbids_framing() -> None:
    for path in ("/healthz", "/readyz", "/nowhere"):
        answer = await _get("localhost:9470", path)
        assert answer.status_code in (200, 404)
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]


@pytest.mark.parametrize(
    ("configured", "open_files", "kept"),
    [
        (100, 1024, 100),
        (1000, 1024, 512),
        (100, 64, 32),
        (100, 1, 1),
        (100, -1, 100),  # no open-file limit
    ],
)
def test_the_connection_limit_leaves_half_the_open_files_to_the_d(
    configured: int, open_files: int, kept: int
) -> None:
    assert connection_limit(configured, open_files) == kept


def test_the_http_edge_settings_default_to_the_documented_figures() -> None:
    s = load_settings(ENV)
    assert (s.http_header_timeout_s, s.http_body_timeout_s, s.http_idle_timeout_s) == (10, 30, 5)
    assert s.http_max_connections == 100 and s.http_allowed_hosts == ()
    assert "DISPATCHER_HTTP_MAX_CONNECTIONS" in describe(s)


def test_allowed_hosts_are_read_normalised_and_shown_as_written() -> None:
    raw = " D1.Example.NET., 10.0.0.5,[FE80::1],d1.example.net "
    s = load_settings({**ENV, "DISPATCHER_HTTP_ALLOWED_HOSTS": raw})
    assert s.http_allowed_hosts == ("d1.example.net", "10.0.0.5", "fe80::1")
    shown = [line for line in describe(s).splitlines() if "ALLOWED_HOSTS" in line]
    assert shown == [f"{'DISPATCHER_HTTP_ALLOWED_HOSTS':<34} = d1.example.net,10.0.0.5,fe80::1"]


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("DISPATCHER_HTTP_HEADER_TIMEOUT_S", "0", "> 0 and <= 600"),
        ("DISPATCHER_HTTP_HEADER_TIMEOUT_S", "nan", "> 0 and <= 600"),
        ("DISPATCHER_HTTP_BODY_TIMEOUT_S", "601", "> 0 and <= 600"),
        ("DISPATCHER_HTTP_BODY_TIMEOUT_S", "soon", "> 0 and <= 600, not 'soon'"),
        ("DISPATCHER_HTTP_IDLE_TIMEOUT_S", "0", "1..600"),
        ("DISPATCHER_HTTP_IDLE_TIMEOUT_S", "2.5", "1..600, not '2.5'"),
        ("DISPATCHER_HTTP_MAX_CONNECTIONS", "0", "1..65535"),
        ("DISPATCHER_HTTP_MAX_CONNECTIONS", "many", "1..65535, not 'many'"),
        ("DISPATCHER_HTTP_ALLOWED_HOSTS", "http://d1.example.net", "not a host name"),
        ("DISPATCHER_HTTP_ALLOWED_HOSTS", "d1.example.net:9470", "without scheme, port"),
        ("DISPATCHER_HTTP_ALLOWED_HOSTS", "*.example.net", "'*.example.net'"),
        ("DISPATCHER_HTTP_ALLOWED_HOSTS", "ok.test,bad host", "'bad host'"),
    ],
)
def test_a_bad_http_edge_setting_is_named_with_what_to_fix(
    name: str, value: str, says: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({**ENV, name: value})
    message = str(caught.value)
    assert name in message and says in message and message.count("\n") == 0


def test_every_bad_http_edge_setting_gets_its_own_line() -> None:
    bad = {"DISPATCHER_HTTP_HEADER_TIMEOUT_S": "-1", "DISPATCHER_HTTP_MAX_CONNECTIONS": "0"}
    with pytest.raises(SettingsError) as caught:
        load_settings({**ENV, **bad})
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("2 settings")
    assert [name for name in bad if any(line.strip().startswith(name) for line in lines)] == [*bad]
