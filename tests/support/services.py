"""Where the local real services listen (importable as `tests.support.services`).

The defaults match `scripts/services start`; `scripts/services env` prints the same values
as environment variables, which take precedence here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class S3Settings:
    endpoint: str
    access_key: str
    secret_key: str
    bucket: str
    region: str


def amqp_url() -> str:
    return os.environ.get("AGENTCALL_AMQP_URL", "amqp://agentcall:agentcall@127.0.0.1:5672/")


def mysql_url() -> str:
    return os.environ.get(
        "ORBIT_TEST_MYSQL_URL", "mysql+asyncmy://orbit:orbit@127.0.0.1:3306/orbit"
    )


def s3_settings() -> S3Settings:
    env = os.environ.get
    return S3Settings(
        endpoint=env("AGENTCALL_S3_ENDPOINT", "http://127.0.0.1:8333"),
        access_key=env("AGENTCALL_S3_ACCESS_KEY", "agentcall"),
        secret_key=env("AGENTCALL_S3_SECRET_KEY", "agentcall-secret-key"),
        bucket=env("AGENTCALL_S3_BUCKET", "recordings"),
        region=env("AGENTCALL_S3_REGION", "us-east-1"),
    )
