"""The SDK's command-line settings (`agentcall.orbit.sdk.settings`): an option wins over its
`ORBIT_*` variable, a missing or bad value is refused naming the variable."""

from __future__ import annotations

import pytest

from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.domain.tokens import generate_secret
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
TOKEN = generate_secret()  # a token as Orbit issues it
ENV_TOKEN_VALUE = generate_secret()


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_URL, ENV_TOKEN, ENV_QUEUES):
        monkeypatch.delenv(name, raising=False)


def test_options_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_URL, "http://env:1")
    monkeypatch.setenv(ENV_TOKEN, ENV_TOKEN_VALUE)
    assert client_settings(None, None) == ClientSettings("http://env:1", ENV_TOKEN_VALUE)
    assert client_settings("https://opt", TOKEN) == ClientSettings("https://opt", TOKEN)


def test_missing_address_and_token_are_named() -> None:
    with pytest.raises(SetupError, match="set ORBIT_URL and ORBIT_TOKEN"):
        client_settings(None, None)
    with pytest.raises(SetupError, match=r"set ORBIT_TOKEN \(or pass"):
        worker_settings(url="ws://x", token=None, queues=(QUEUE,))


def test_schemes_differ_between_client_and_worker() -> None:
    with pytest.raises(SetupError, match="ORBIT_URL must start with http"):
        client_settings("ws://x", TOKEN)
    assert worker_settings(url="ws://x", token=TOKEN, queues=(QUEUE,)).url == "ws://x"
    with pytest.raises(SetupError, match="ORBIT_URL must be an http"):
        worker_settings(url="ftp://x", token=TOKEN, queues=(QUEUE,))


def test_worker_queues_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SetupError, match=ENV_QUEUES):
        worker_settings(url="http://x", token=TOKEN, queues=())
    monkeypatch.setenv(ENV_QUEUES, f"{QUEUE} {'b' * 32}")
    settings = worker_settings(url="http://x", token=TOKEN, queues=(), name="w1", loop="asyncio")
    assert settings == WorkerSettings(
        url="http://x", token=TOKEN, queues=(QUEUE, "b" * 32), name="w1", loop="asyncio"
    )
    with pytest.raises(SetupError, match=ENV_QUEUES):
        worker_settings(url="http://x", token=TOKEN, queues=("not-an-id",))


def test_worker_name_defaults_to_the_host() -> None:
    assert worker_settings(url="http://x", token=TOKEN, queues=(QUEUE,)).name.startswith("orbit@")


@pytest.mark.parametrize(
    "weak",
    [
        "a" * 16,  # sixteen identical characters
        "orb_" + "a" * 43,  # long enough, one character
        "orb_" + "ab" * 22,  # two characters repeated
        "orb_short",
        "t",
    ],
)
def test_a_weak_token_is_refused_with_what_to_fix(weak: str) -> None:
    for configure in (
        lambda: client_settings("http://x", weak),
        lambda: worker_settings(url="http://x", token=weak, queues=(QUEUE,)),
    ):
        with pytest.raises(SetupError, match="ORBIT_TOKEN / --token is not a token Orbit issued"):
            configure()
