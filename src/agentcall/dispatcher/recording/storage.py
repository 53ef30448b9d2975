"""Object storage for recordings: one small port and its S3 adapter (boto3).

The D never moves recording bytes to the bucket itself: it presigns a PUT for the fixed
object key (D-REC-1) and the cell performs it. After the PUT the D reads the object back
(HEAD for the size, then the body for its SHA-256) to verify it (D-REC-2). Works with any
S3-compatible endpoint (``DISPATCHER_S3_ENDPOINT``; AWS when unset).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from agentcall.dispatcher.domain.recording import Missing, ObjectFacts
from agentcall.dispatcher.errors import DispatcherError
from agentcall.dispatcher.settings import Secret, Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

CHUNK = 1 << 20
T = TypeVar("T")


class RecordingError(DispatcherError):
    """A recording could not be authorized or verified."""


class StorageUnavailable(RecordingError):
    """The object store did not answer; the sweeper tries again on its next round.

    Fix: check DISPATCHER_S3_ENDPOINT and that the storage service is up.
    """


class AuthorizationFailed(RecordingError):
    """No presigned PUT can be made; the recording closes ``upload_authorization_failed``.

    Fix: set DISPATCHER_S3_BUCKET, DISPATCHER_S3_ACCESS_KEY and DISPATCHER_S3_SECRET_KEY
    (or give the process AWS credentials another way).
    """


@dataclass(frozen=True)
class StorageConfig:
    bucket: str
    region: str = "us-east-1"
    endpoint: str | None = None
    access_key: str | None = None
    secret_key: Secret | None = field(default=None, repr=False)
    key_prefix: str = "calls"

    @staticmethod
    def from_settings(settings: Settings) -> StorageConfig | None:
        """None when no bucket is configured (recordings then close unavailable at once)."""
        if settings.s3_bucket is None:
            return None
        return StorageConfig(
            bucket=settings.s3_bucket,
            region=settings.s3_region,
            endpoint=settings.s3_endpoint,
            access_key=settings.s3_access_key,
            secret_key=settings.s3_secret_key,
            key_prefix=settings.s3_key_prefix,
        )


class ObjectStore(Protocol):
    @property
    def bucket(self) -> str: ...

    async def presign_put(self, key: str, expires_s: int) -> str:
        """A URL that allows one PUT of ``key`` for ``expires_s`` seconds (a secret)."""
        ...

    async def probe(self, key: str) -> ObjectFacts | Missing:
        """Size and SHA-256 of the object, or :class:`Missing`; raises StorageUnavailable."""
        ...


def _client(config: StorageConfig) -> S3Client:
    kwargs: dict[str, Any] = {
        "region_name": config.region,
        "config": Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            retries={"max_attempts": 2, "mode": "standard"},
            connect_timeout=3,
            read_timeout=15,
        ),
    }
    if config.endpoint:
        kwargs["endpoint_url"] = config.endpoint
    if config.access_key and config.secret_key is not None:
        kwargs["aws_access_key_id"] = config.access_key
        kwargs["aws_secret_access_key"] = config.secret_key.reveal()
    client: S3Client = boto3.client("s3", **kwargs)
    return client


def _missing(exc: ClientError) -> bool:
    error = exc.response.get("Error", {})
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status == 404 or error.get("Code") in ("404", "NoSuchKey", "NotFound")


class S3Store:
    """:class:`ObjectStore` over boto3; blocking calls run in worker threads."""

    def __init__(self, config: StorageConfig, threads: int = 16) -> None:
        self._config = config
        self._s3 = _client(config)
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="s3")

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    @property
    def bucket(self) -> str:
        return self._config.bucket

    def _presign(self, key: str, expires_s: int) -> str:
        try:
            url: str = self._s3.generate_presigned_url(
                "put_object",
                Params={"Bucket": self._config.bucket, "Key": key},
                ExpiresIn=expires_s,
                HttpMethod="PUT",
            )
        except (NoCredentialsError, BotoCoreError, ClientError) as exc:
            raise AuthorizationFailed(f"cannot presign a PUT: {type(exc).__name__}") from exc
        return url

    async def presign_put(self, key: str, expires_s: int) -> str:
        return await self._run(self._presign, key, expires_s)

    def _presign_get(self, key: str, expires_s: int) -> str:
        try:
            url: str = self._s3.generate_presigned_url(
                "get_object",
                Params={"Bucket": self._config.bucket, "Key": key},
                ExpiresIn=expires_s,
            )
        except (NoCredentialsError, BotoCoreError, ClientError) as exc:
            raise AuthorizationFailed(f"cannot presign a GET: {type(exc).__name__}") from exc
        return url

    async def presign_get(self, key: str, expires_s: int) -> str:
        """A URL that allows reading ``key`` for ``expires_s`` seconds (the console's
        recording link: made on request, never stored)."""
        return await self._run(self._presign_get, key, expires_s)

    def _probe(self, key: str) -> ObjectFacts | Missing:
        bucket = self._config.bucket
        try:
            head = self._s3.head_object(Bucket=bucket, Key=key)
            body = self._s3.get_object(Bucket=bucket, Key=key)["Body"]
            digest = hashlib.sha256()
            for chunk in body.iter_chunks(CHUNK):
                digest.update(chunk)
        except ClientError as exc:
            if _missing(exc):
                return Missing()
            raise StorageUnavailable(f"probe {key}: {exc.response.get('Error', {})}") from exc
        except BotoCoreError as exc:
            raise StorageUnavailable(f"probe {key}: {type(exc).__name__}: {exc}") from exc
        return ObjectFacts(size_bytes=int(head["ContentLength"]), sha256=digest.hexdigest())

    async def probe(self, key: str) -> ObjectFacts | Missing:
        return await self._run(self._probe, key)
