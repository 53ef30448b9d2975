"""The SDK's command-line settings (`orbit.sdk.settings`): an option wins over its `ORBIT_*`
variable, a missing or bad value is refused naming the variable."""

from __future__ import annotations

import pytest

from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.sdk.settings import (
    ENV_QUEUES,
    ENV_TOKEN,
    ENV_URL,
    ClientSettings,
    WorkerSettings,
    client_settings,
    worker_settings,
)

pytestmark = pytest.mark.unit

QUEUE = "a" * 32


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_URL, ENV_TOKEN, ENV_QUEUES):
        monkeypatch.delenv(name, raising=False)


def test_options_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_URL, "http://env:1")
    monkeypatch.setenv(ENV_TOKEN, "env-token")
    assert client_settings(None, None) == ClientSettings("http://env:1", "env-token")
    assert client_settings("https://opt", "t") == ClientSettings("https://opt", "t")


def test_missing_address_and_token_are_named() -> None:
    with pytest.raises(SetupError, match="set ORBIT_URL and ORBIT_TOKEN"):
        client_settings(None, None)
    with pytest.raises(SetupError, match=r"set ORBIT_TOKEN \(or pass"):
        worker_settings(url="ws://x", token=None, queues=(QUEUE,))


def test_schemes_differ_between_client_and_worker() -> None:
    with pytest.raises(SetupError, match="ORBIT_URL must start with http"):
        client_settings("ws://x", "t")
    assert worker_settings(url="ws://x", token="t", queues=(QUEUE,)).url == "ws://x"
    with pytest.raises(SetupError, match="ORBIT_URL must be an http"):
        worker_settings(url="ftp://x", token="t", queues=(QUEUE,))


def test_worker_queues_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SetupError, match=ENV_QUEUES):
        worker_settings(url="http://x", token="t", queues=())
    monkeypatch.setenv(ENV_QUEUES, f"{QUEUE} {'b' * 32}")
    settings = worker_settings(url="http://x", token="t", queues=(), name="w1", loop="asyncio")
    assert settings == WorkerSettings(
        url="http://x", token="t", queues=(QUEUE, "b" * 32), name="w1", loop="asyncio"
    )
    with pytest.raises(SetupError, match=ENV_QUEUES):
        worker_settings(url="http://x", token="t", queues=("not-an-id",))


def test_worker_name_defaults_to_the_host() -> None:
    assert worker_settings(url="http://x", token="t", queues=(QUEUE,)).name.startswith("orbit@")
