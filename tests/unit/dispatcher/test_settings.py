"""Settings fail fast naming the setting; the secret never shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcall.dispatcher.settings import Secret, SettingsError, load_settings
from tests.support.dispatcher_factories import D_ID

ENV = {
    "DISPATCHER_ID": D_ID,
    "DISPATCHER_SECRET_KEY": "s3cr3t-value",
    "DISPATCHER_SAAS_URL": "http://127.0.0.1:8080/",
    "DISPATCHER_AMQP_URL": "amqp://u:p@127.0.0.1:5672/",
    "DISPATCHER_STATE_DB": "/tmp/d.sqlite",
    "DISPATCHER_CELL_URL": "http://127.0.0.1:8090",
    "DISPATCHER_HTTP_PORT": "9470",
}


def test_env_only() -> None:
    settings = load_settings(ENV)
    assert settings.dispatcher_id == D_ID
    assert settings.saas_url == "http://127.0.0.1:8080"
    assert settings.http_host == "127.0.0.1"
    assert settings.secret_key.reveal() == "s3cr3t-value"


def test_secret_never_in_repr() -> None:
    settings = load_settings(ENV)
    assert "s3cr3t" not in repr(settings)
    assert "s3cr3t" not in str(settings.secret_key)
    assert Secret("a") == Secret("a")


@pytest.mark.parametrize(
    ("name", "value", "mentions"),
    [
        ("DISPATCHER_ID", None, "DISPATCHER_ID"),
        ("DISPATCHER_ID", "C046B893-8628-4589-AE50-619D049248A6", "DISPATCHER_ID"),
        ("DISPATCHER_ID", "c046b893-8628-1589-ae50-619d049248a6", "UUID v4"),
        ("DISPATCHER_SAAS_URL", "ftp://x", "DISPATCHER_SAAS_URL"),
        ("DISPATCHER_AMQP_URL", "http://x", "DISPATCHER_AMQP_URL"),
        ("DISPATCHER_STATE_DB", None, "DISPATCHER_STATE_DB"),
        ("DISPATCHER_CELL_URL", None, "DISPATCHER_CELL_URL"),
        ("DISPATCHER_HTTP_PORT", "99999", "DISPATCHER_HTTP_PORT"),
        ("DISPATCHER_HTTP_PORT", "abc", "DISPATCHER_HTTP_PORT"),
        ("DISPATCHER_QUOTA_TTL_S", "120", "DISPATCHER_QUOTA_TTL_S"),
        ("DISPATCHER_SECRET_KEY", None, "DISPATCHER_SECRET_KEY"),
        ("DISPATCHER_LOG_FORMAT", "xml", "DISPATCHER_LOG_FORMAT"),
    ],
)
def test_invalid_or_missing_setting_named(name: str, value: str | None, mentions: str) -> None:
    env = dict(ENV)
    if value is None:
        env.pop(name)
    else:
        env[name] = value
    with pytest.raises(SettingsError, match=mentions) as info:
        load_settings(env)
    assert "s3cr3t" not in str(info.value)


def test_toml_file_and_env_precedence(tmp_path: Path) -> None:
    config = tmp_path / "d.toml"
    config.write_text("[dispatcher]\nhttp_port = 9999\ndiscovery_interval_s = 0.5\n")
    env = dict(ENV)
    env.pop("DISPATCHER_HTTP_PORT")
    settings = load_settings(env, config)
    assert settings.http_port == 9999
    assert settings.discovery_interval_s == 0.5
    env["DISPATCHER_HTTP_PORT"] = "1234"
    assert load_settings(env, config).http_port == 1234


def test_toml_rejects_inline_secret_and_unknown_keys(tmp_path: Path) -> None:
    config = tmp_path / "d.toml"
    config.write_text('secret_key = "nope"\n')
    with pytest.raises(SettingsError, match="secret_key must not be written"):
        load_settings(ENV, config)
    config.write_text("http_prot = 1\n")
    with pytest.raises(SettingsError, match="http_prot"):
        load_settings(ENV, config)


def test_secret_file_must_be_private(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("from-file\n")
    env = dict(ENV)
    env.pop("DISPATCHER_SECRET_KEY")
    env["DISPATCHER_SECRET_KEY_FILE"] = str(secret)
    os.chmod(secret, 0o644)
    with pytest.raises(SettingsError, match="chmod 600"):
        load_settings(env)
    os.chmod(secret, 0o600)
    assert load_settings(env).secret_key.reveal() == "from-file"


@pytest.mark.parametrize(
    ("host", "token", "refused"),
    [
        ("127.0.0.1", None, False),
        ("127.0.0.2", None, False),
        ("localhost", None, False),
        ("::1", None, False),
        ("0.0.0.0", None, True),
        ("10.1.2.3", None, True),
        ("::", None, True),
        ("edge.example", None, True),
        ("0.0.0.0", "a-console-token-0123", False),
    ],
)
def test_a_non_loopback_bind_needs_the_console_token(
    host: str, token: str | None, refused: bool
) -> None:
    env = dict(ENV, DISPATCHER_HTTP_HOST=host)
    if token is not None:
        env["DISPATCHER_CONSOLE_TOKEN"] = token
    if not refused:
        settings = load_settings(env)
        assert (settings.console_token is None) == (token is None)
        assert token is None or token not in repr(settings)
        return
    with pytest.raises(SettingsError) as caught:
        load_settings(env)
    assert "DISPATCHER_CONSOLE_TOKEN" in str(caught.value)
    assert "DISPATCHER_HTTP_HOST=127.0.0.1" in str(caught.value)


def test_a_short_console_token_is_refused() -> None:
    with pytest.raises(SettingsError, match="DISPATCHER_CONSOLE_TOKEN is invalid"):
        load_settings(dict(ENV, DISPATCHER_CONSOLE_TOKEN="short"))
