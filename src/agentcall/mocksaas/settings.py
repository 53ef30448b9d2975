"""Typed settings of ``mocksaas serve`` (CLI options doubling as ``MOCKSAAS_*`` env vars)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentcall.mocksaas.domain.discovery import MAX_PAGE_SIZE
from agentcall.mocksaas.errors import ConfigurationError

DEFAULT_AMQP_URL = "amqp://agentcall:agentcall@127.0.0.1:5672/"


@dataclass(frozen=True)
class Settings:
    http_host: str
    http_port: int
    amqp_url: str
    db_path: Path
    page_size: int = MAX_PAGE_SIZE
    contracts_dir: Path | None = None
    relay_interval_s: float = 1.0

    def __post_init__(self) -> None:
        if not 0 <= self.http_port <= 65535:
            raise ConfigurationError("--http-port must be 0..65535")
        if not 1 <= self.page_size <= MAX_PAGE_SIZE:
            raise ConfigurationError(f"--discovery-page-size must be 1..{MAX_PAGE_SIZE}")
        if not self.amqp_url.startswith(("amqp://", "amqps://")):
            raise ConfigurationError("--amqp-url must start with amqp:// or amqps://")
