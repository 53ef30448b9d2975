"""Settings parsed whole: ports, URLs (scheme, host, numeric port), the console token's
strength; each refusal names the setting and says what to fix, in one line."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.settings import SettingsError, load_settings
from agentcall.dispatcher.settings_values import port, token_bits, token_problem, url

pytestmark = pytest.mark.unit

ENV = {
    "DISPATCHER_ID": "2f1a4e0c-7d3b-4c1e-9a5f-0b6c8d2e4f10",
    "DISPATCHER_SECRET_KEY": "k",
    "DISPATCHER_SAAS_URL": "http://127.0.0.1:8088",
    "DISPATCHER_AMQP_URL": "amqp://u:p@127.0.0.1:5672/",
    "DISPATCHER_STATE_DB": "/var/lib/d.sqlite",
    "DISPATCHER_CELL_URL": "http://127.0.0.1:8470",
}


@pytest.mark.parametrize(
    ("raw", "value"), [("0", 0), ("9470", 9470), ("65535", 65535), (" 80 ", 80)]
)
def test_ports_accepted(raw: str, value: int) -> None:
    assert port(raw) == value


@pytest.mark.parametrize("raw", ["-1", "65536", "notaport", "", "80.5", "0x50"])
def test_ports_refused_with_the_range(raw: str) -> None:
    with pytest.raises(ValueError, match=r"integer port 0\.\.65535"):
        port(raw)


AMQP = url("amqp", "amqps")
HTTP = url("http", "https")


@pytest.mark.parametrize(
    ("parse", "raw"),
    [
        (AMQP, "amqp://u:p@127.0.0.1:5672/"),
        (AMQP, "amqps://broker.example/vhost"),
        (AMQP, "amqp://u:p@[::1]:5672/"),
        (HTTP, "http://127.0.0.1:8088"),
        (HTTP, "https://saas.example/base/"),
    ],
)
def test_urls_accepted(parse: object, raw: str) -> None:
    assert callable(parse)
    assert parse(raw).startswith(raw.rstrip("/"))


@pytest.mark.parametrize(
    ("parse", "raw", "word"),
    [
        (AMQP, "amqp://u:p@127.0.0.1:notaport/", "port must be a number"),
        (AMQP, "amqp://u:p@127.0.0.1:70000/", "port must be a number"),
        (AMQP, "amqp://u:p@127.0.0.1:0/", "not 0"),
        (AMQP, "amqp://:5672/", "host is missing"),
        (AMQP, "http://127.0.0.1:5672/", "scheme must be amqp/amqps"),
        (AMQP, "127.0.0.1:5672", "scheme"),
        (HTTP, "http://saas example", "spaces"),
        (HTTP, "http://saas.example/?a=1", "query"),
        (HTTP, "http://", "host is missing"),
    ],
)
def test_urls_refused_saying_what_is_wrong(parse: object, raw: str, word: str) -> None:
    assert callable(parse)
    with pytest.raises(ValueError, match=word):
        parse(raw)


def test_a_url_port_that_is_not_a_number_is_not_echoed() -> None:
    """``amqp://user:secret`` puts the password where a port goes: never repeat it."""
    with pytest.raises(ValueError) as caught:
        AMQP("amqp://user:hunter2secret")
    assert "hunter2secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("token", "word"),
    [
        ("aaaaaaaaaaaaaaaa", "distinct characters"),
        ("abababababababababababab", "distinct characters"),
        ("passwordpassword", "distinct characters"),
        ("short-Tok3n", "at least 16"),
        ("aaaaaaaaaaaaabcdefgh", "bits of entropy"),
        ("with a space 0123456789", "without spaces"),
    ],
)
def test_weak_console_tokens_are_refused(token: str, word: str) -> None:
    problem = token_problem(token)
    assert problem is not None and word in problem


@pytest.mark.parametrize(
    "token",
    ["a-console-token-0123", "console-token-0123456789", "9f86d081884c7d659a2feaa0c55ad015"],
)
def test_strong_console_tokens_pass(token: str) -> None:
    assert token_problem(token) is None


def test_token_bits_counts_only_what_varies() -> None:
    assert token_bits("a" * 40) == 0
    assert token_bits("ab" * 8) == 16


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"DISPATCHER_AMQP_URL": "amqp://u:p@127.0.0.1:notaport/"}, "DISPATCHER_AMQP_URL"),
        ({"DISPATCHER_CONSOLE_TOKEN": "x" * 16}, "DISPATCHER_CONSOLE_TOKEN"),
        ({"DISPATCHER_HTTP_PORT": "notaport"}, "DISPATCHER_HTTP_PORT"),
        ({"DISPATCHER_SAAS_URL": "http://saas:99999"}, "DISPATCHER_SAAS_URL"),
    ],
)
def test_check_config_refuses_each_in_one_line_naming_the_setting(
    extra: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({**ENV, **extra})
    message = str(caught.value)
    assert message.startswith(f"{named} is invalid: ")
    assert "\n" not in message
    assert "p@" not in message, "no URL password in the message"
