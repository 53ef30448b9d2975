"""`dispatcher check-config`: every missing or invalid setting in one run, and a printout
that shows no secret and no password of any URL."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from agentcall.dispatcher.cli import main
from agentcall.dispatcher.settings import SettingsError, describe, load_settings, redact_url
from tests.support.dispatcher_factories import D_ID

ENV = {
    "DISPATCHER_ID": D_ID,
    "DISPATCHER_SECRET_KEY": "very-secret-value",
    "DISPATCHER_SAAS_URL": "https://saas.example.com",
    "DISPATCHER_AMQP_URL": "amqps://dispatcher:amqp-pass%40word@mq.example.com:5671/",
    "DISPATCHER_STATE_DB": "/tmp/never-opened.sqlite",
    "DISPATCHER_CELL_URL": "http://127.0.0.1:8470",
}


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("amqp://u:p@127.0.0.1:5672/", "amqp://u:***@127.0.0.1:5672/"),
        (
            "amqps://user:pa%40ss@mq.example.com:5671/vhost",
            "amqps://user:***@mq.example.com:5671/vhost",
        ),
        ("amqp://u:p@[::1]:5672/", "amqp://u:***@[::1]:5672/"),
        ("amqp://:p@h/", "amqp://:***@h/"),
        ("amqp://guest@h/", "amqp://guest@h/"),
        ("https://saas.example.com/x?a=1", "https://saas.example.com/x?a=1"),
    ],
)
def test_redact_url_hides_only_the_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_describe_shows_no_secret_and_no_url_password() -> None:
    env = dict(
        ENV,
        DISPATCHER_S3_ACCESS_KEY="AKIDEXAMPLE",
        DISPATCHER_S3_SECRET_KEY="s3-secret-value",
        DISPATCHER_S3_BUCKET="rec",
    )
    text = describe(load_settings(env))
    for secret in ("very-secret-value", "amqp-pass", "s3-secret-value"):
        assert secret not in text
    assert "DISPATCHER_AMQP_URL" in text and "amqps://dispatcher:***@mq.example.com:5671/" in text
    assert "DISPATCHER_SECRET_KEY" in text and "*** (set)" in text
    assert re.search(rf"^DISPATCHER_ID +{re.escape('= ' + D_ID)}$", text, re.MULTILINE)


def test_every_problem_is_named_in_one_error() -> None:
    env = dict(ENV, DISPATCHER_ID="not-a-uuid", DISPATCHER_HTTP_PORT="99999")
    del env["DISPATCHER_AMQP_URL"], env["DISPATCHER_SECRET_KEY"]
    with pytest.raises(SettingsError) as info:
        load_settings(env)
    message = str(info.value)
    assert message.startswith("4 settings are missing or invalid:")
    for name in (
        "DISPATCHER_ID",
        "DISPATCHER_HTTP_PORT",
        "DISPATCHER_AMQP_URL is missing",
        "DISPATCHER_SECRET_KEY is missing",
    ):
        assert name in message


def test_one_problem_is_one_line() -> None:
    env = dict(ENV, DISPATCHER_LOG_FORMAT="xml")
    with pytest.raises(SettingsError) as info:
        load_settings(env)
    assert "\n" not in str(info.value) and "DISPATCHER_LOG_FORMAT" in str(info.value)


def test_check_config_prints_the_masked_settings() -> None:
    result = CliRunner().invoke(main, ["check-config"], env=ENV)
    assert result.exit_code == 0, result.output
    assert "amqp-pass" not in result.output and "very-secret-value" not in result.output
    assert "amqps://dispatcher:***@mq.example.com:5671/" in result.output


def test_check_config_names_every_problem_and_exits_2() -> None:
    env = dict(ENV, DISPATCHER_CELL_URL="ftp://x", DISPATCHER_PREFETCH="0")
    result = CliRunner().invoke(main, ["check-config"], env=env)
    assert result.exit_code == 2
    assert "DISPATCHER_CELL_URL" in result.output and "DISPATCHER_PREFETCH" in result.output
    assert "amqp-pass" not in result.output


SECRETS = {
    "DISPATCHER_SECRET_KEY": "very-secret-value",
    "DISPATCHER_S3_SECRET_KEY": "s3-secret-value",
    "DISPATCHER_CONSOLE_TOKEN": "console-token-0123456789",
}


def test_every_secret_and_every_url_password_is_masked() -> None:
    env = dict(
        ENV,
        **SECRETS,
        DISPATCHER_S3_ACCESS_KEY="AKIDEXAMPLE",
        DISPATCHER_S3_BUCKET="rec",
        DISPATCHER_S3_ENDPOINT="https://s3user:s3-url-pass@s3.example.com",
        DISPATCHER_SAAS_URL="https://saasuser:saas-url-pass@saas.example.com",
    )
    result = CliRunner().invoke(main, ["check-config"], env=env)
    assert result.exit_code == 0, result.output
    for shown in (*SECRETS.values(), "amqp-pass", "s3-url-pass", "saas-url-pass"):
        assert shown not in result.output
    for name in SECRETS:
        assert re.search(rf"^{name} += \*\*\* \(set\)$", result.output, re.MULTILINE), name
    assert "https://s3user:***@s3.example.com" in result.output


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (
            {"DISPATCHER_S3_ACCESS_KEY": "AKID"},
            "DISPATCHER_S3_ACCESS_KEY and DISPATCHER_S3_SECRET_KEY",
        ),
        ({"DISPATCHER_S3_SECRET_KEY": "s3-secret-value"}, "go together"),
        (
            {"DISPATCHER_SAAS_RETRY_BASE_S": "5", "DISPATCHER_SAAS_RETRY_MAX_S": "2"},
            "DISPATCHER_SAAS_RETRY_BASE_S (5.0) is above DISPATCHER_SAAS_RETRY_MAX_S (2.0)",
        ),
    ],
)
def test_settings_valid_alone_but_not_together_are_named(extra: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings(dict(ENV, **extra))
    assert named in str(info.value) and "s3-secret-value" not in str(info.value)


def test_check_config_names_every_kind_of_problem_in_one_run_without_secrets() -> None:
    env = dict(
        ENV,
        DISPATCHER_ID="not-a-uuid",
        DISPATCHER_S3_SECRET_KEY="s3-secret-value",
        DISPATCHER_SAAS_RETRY_BASE_S="9",
        DISPATCHER_SAAS_RETRY_MAX_S="3",
        DISPATCHER_AMQP_URL="http://dispatcher:amqp-pass@mq.example.com/",
    )
    del env["DISPATCHER_CELL_URL"]
    result = CliRunner().invoke(main, ["check-config"], env=env)
    assert result.exit_code == 2
    assert "5 settings are missing or invalid" in result.output
    for named in (
        "DISPATCHER_ID",
        "DISPATCHER_CELL_URL is missing",
        "DISPATCHER_AMQP_URL",
        "go together",
        "DISPATCHER_SAAS_RETRY_BASE_S",
    ):
        assert named in result.output
    assert "amqp-pass" not in result.output and "s3-secret-value" not in result.output
