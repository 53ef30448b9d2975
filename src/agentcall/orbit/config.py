"""Configuration: `ORBIT_*` environment variables double as command-line defaults; values are
validated when a command starts and a bad one stops it with a message naming the variable."""

from __future__ import annotations

import os

from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.store.db import DEFAULT_URL

ENV_DATABASE = "ORBIT_DATABASE_URL"
ENV_HOST = "ORBIT_HOST"
ENV_PORT = "ORBIT_PORT"
ENV_LOG_FORMAT = "ORBIT_LOG_FORMAT"
ENV_LOG_LEVEL = "ORBIT_LOG_LEVEL"
ENV_URL = "ORBIT_URL"
ENV_TOKEN = "ORBIT_TOKEN"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_DATABASE = DEFAULT_URL


def client_settings(url: str | None, token: str | None) -> tuple[str, str]:
    """The API address and token for `orbit tasks ...`, from options or the environment."""
    url = url or os.environ.get(ENV_URL)
    token = token or os.environ.get(ENV_TOKEN)
    missing = [name for name, value in ((ENV_URL, url), (ENV_TOKEN, token)) if not value]
    if missing:
        raise SetupError(f"set {' and '.join(missing)} (or pass --url / --token)")
    assert url is not None and token is not None
    if not url.startswith(("http://", "https://")):
        raise SetupError(f"{ENV_URL} must start with http:// or https://, got {url!r}")
    return url, token
