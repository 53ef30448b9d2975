"""The server's settings (`agentcall.orbit.settings`): every `ORBIT_*` variable is read once, where
the server is assembled; unset or empty keeps the default, a bad value is refused naming the
variable, and what `orbit serve --workers N` hands its processes reads back the same."""

from __future__ import annotations

import pytest

from agentcall.orbit import settings
from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.settings import (
    ENV_TOKEN_CACHE_MS,
    ConsoleSettings,
    ExecutionSettings,
    ServerSettings,
    from_environ,
    to_environ,
)
from agentcall.orbit.store.token_cache import TokenCache

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("text", "ttl"), [(None, 1.0), ("", 1.0), ("0", 0.0), ("250", 0.25)])
def test_ttl_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, text: str | None, ttl: float
) -> None:
    if text is None:
        monkeypatch.delenv(ENV_TOKEN_CACHE_MS, raising=False)
    else:
        monkeypatch.setenv(ENV_TOKEN_CACHE_MS, text)
    assert TokenCache(from_environ().token_cache_ms / 1000).ttl_s == ttl


@pytest.mark.parametrize("text", ["-1", "1.5", "soon", "60001"])
def test_bad_ttl_setting_is_refused(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv(ENV_TOKEN_CACHE_MS, text)
    with pytest.raises(SetupError, match=ENV_TOKEN_CACHE_MS):
        from_environ()


def test_unset_variables_keep_the_defaults() -> None:
    assert from_environ({}) == ServerSettings()


def test_every_variable_is_read() -> None:
    env = {
        "ORBIT_DATABASE_URL": "sqlite+aiosqlite:///x.db",
        "ORBIT_HOST": "0.0.0.0",
        "ORBIT_PORT": "9000",
        "ORBIT_LOG_FORMAT": "json",
        "ORBIT_ACCESS_LOG": "0",
        "ORBIT_POOL_SIZE": "7",
        "ORBIT_WORKERS": "3",
        "ORBIT_SSL_CERTFILE": "/c.pem",
        "ORBIT_SSL_KEYFILE": "/k.pem",
        "ORBIT_TOKEN_CACHE_MS": "0",
        "ORBIT_SUBMIT_LANES": "3",
        "ORBIT_LEASE_TTL_MS": "1500",
        "ORBIT_RECONNECT_GRACE_MS": "0",
        "ORBIT_SWEEP_INTERVAL_MS": "50",
        "ORBIT_DISPATCH_TICK_MS": "100",
        "ORBIT_WRITE_LANES": "2",
        "ORBIT_EAGER_DISPATCH": "0",
        "ORBIT_REMOTE_EAGER": "0",
        "ORBIT_WORKER_TOKEN_CHECK_MS": "500",
        "ORBIT_PEER_HOST": "10.0.0.2",
        "ORBIT_PEER_PORT": "7471",
        "ORBIT_PEER_ADVERTISE": "orbit-2",
        "ORBIT_BULK_CLAIM_MS": "5000",
        "ORBIT_ALLOWED_HOSTS": "orbit.example.com,.internal.example,10.0.0.7",
        "ORBIT_TRUSTED_PROXIES": "10.0.0.0/8,::1/128",
        "ORBIT_CONSOLE_IDLE_S": "600",
        "ORBIT_CONSOLE_MAX_AGE_S": "7200",
        "ORBIT_TRACING": "1",
    }
    assert from_environ(env) == ServerSettings(
        database_url="sqlite+aiosqlite:///x.db",
        host="0.0.0.0",
        port=9000,
        log_format="json",
        access_log=False,
        pool_size=7,
        workers=3,
        ssl_certfile="/c.pem",
        ssl_keyfile="/k.pem",
        token_cache_ms=0,
        submit_lanes=3,
        execution=ExecutionSettings(
            lease_ttl_ms=1500,
            reconnect_grace_ms=0,
            sweep_interval_ms=50,
            dispatch_tick_ms=100,
            lanes=2,
            eager=False,
            remote_eager=False,
            worker_token_check_ms=500,
            peer_host="10.0.0.2",
            peer_port=7471,
            peer_advertise="orbit-2",
            bulk_claim_ms=5000,
        ),
        console=ConsoleSettings(
            allowed_hosts=("orbit.example.com", ".internal.example", "10.0.0.7"),
            trusted_proxies=("10.0.0.0/8", "::1/128"),
            idle_s=600,
            max_age_s=7200,
        ),
        tracing=True,
    )
    assert to_environ(from_environ(env)) == env


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("ORBIT_SUBMIT_LANES", "0"),
        ("ORBIT_SUBMIT_LANES", "17"),
        ("ORBIT_LEASE_TTL_MS", "299"),
        ("ORBIT_EAGER_DISPATCH", "2"),
        ("ORBIT_WRITE_LANES", "x"),
        ("ORBIT_POOL_SIZE", "0"),
        ("ORBIT_WORKERS", "0"),
        ("ORBIT_WORKERS", "65"),
        ("ORBIT_ACCESS_LOG", "yes"),
        ("ORBIT_WORKER_TOKEN_CHECK_MS", "49"),
        ("ORBIT_WORKER_TOKEN_CHECK_MS", "30001"),
        ("ORBIT_ALLOWED_HOSTS", "orbit.example.com:443"),
        ("ORBIT_ALLOWED_HOSTS", "https://orbit.example.com"),
        ("ORBIT_ALLOWED_HOSTS", "a..b"),
        ("ORBIT_TRUSTED_PROXIES", "10.0.0.0/33"),
        ("ORBIT_TRUSTED_PROXIES", "proxy.example.com"),
        ("ORBIT_CONSOLE_IDLE_S", "59"),
        ("ORBIT_CONSOLE_MAX_AGE_S", "299"),
    ],
)
def test_bad_values_are_refused_naming_the_variable(name: str, text: str) -> None:
    with pytest.raises(SetupError, match=name):
        from_environ({name: text})


def test_export_hands_the_settings_to_new_processes() -> None:
    chosen = ServerSettings(
        database_url="mysql+asyncmy://u:p@h/db",
        pool_size=5,
        access_log=False,
        execution=ExecutionSettings(eager=False),
    )
    environ: dict[str, str] = {}
    settings.export(chosen, environ)
    assert from_environ(environ) == chosen


def test_hosts_and_proxies_are_normalised() -> None:
    console = from_environ(
        {
            "ORBIT_ALLOWED_HOSTS": " Orbit.Example.COM  [::1] .Example.com ",
            "ORBIT_TRUSTED_PROXIES": "192.168.1.5 10.1.2.3/8 ::1",
        }
    ).console
    assert console.allowed_hosts == ("orbit.example.com", "::1", ".example.com")
    assert console.trusted_proxies == ("192.168.1.5/32", "10.0.0.0/8", "::1/128")
    assert ServerSettings().console.trusted_proxies == ()  # no proxy is believed by default
