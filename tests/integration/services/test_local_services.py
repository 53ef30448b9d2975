"""The local services are the real ones and enforce what production would.

The S3 store must reject a bad SigV4 signature and an expired presigned URL with 403,
otherwise the recording rules (D-REC-1: 15-minute authorizations) could not be tested.
"""

from __future__ import annotations

import time
import uuid

import aio_pika
import boto3
import httpx
import pymysql
import pytest
from botocore.config import Config

from tests.support.services import S3Settings, amqp_url, mysql_url

pytestmark = pytest.mark.integration


def _client(s3: S3Settings, secret: str | None = None):  # type: ignore[no-untyped-def]
    return boto3.client(
        "s3",
        endpoint_url=s3.endpoint,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=secret or s3.secret_key,
        region_name=s3.region,
        config=Config(signature_version="s3v4", retries={"max_attempts": 1}),
    )


@pytest.mark.s3
def test_s3_presigned_put_accepted_within_expiry_D_REC_1(s3_settings: S3Settings) -> None:
    key = f"tests/{uuid.uuid4().hex}.bin"
    url = _client(s3_settings).generate_presigned_url(
        "put_object", Params={"Bucket": s3_settings.bucket, "Key": key}, ExpiresIn=60
    )
    assert httpx.put(url, content=b"hello").status_code == 200
    body = _client(s3_settings).get_object(Bucket=s3_settings.bucket, Key=key)["Body"].read()
    assert body == b"hello"


@pytest.mark.s3
def test_s3_rejects_bad_signature_with_403(s3_settings: S3Settings) -> None:
    key = f"tests/{uuid.uuid4().hex}.bin"
    url = _client(s3_settings, secret="wrong-secret").generate_presigned_url(
        "put_object", Params={"Bucket": s3_settings.bucket, "Key": key}, ExpiresIn=60
    )
    assert httpx.put(url, content=b"x").status_code == 403


@pytest.mark.s3
def test_s3_rejects_expired_presigned_url_with_403_D_REC_1(s3_settings: S3Settings) -> None:
    key = f"tests/{uuid.uuid4().hex}.bin"
    url = _client(s3_settings).generate_presigned_url(
        "put_object", Params={"Bucket": s3_settings.bucket, "Key": key}, ExpiresIn=1
    )
    time.sleep(2.2)
    assert httpx.put(url, content=b"x").status_code == 403


@pytest.mark.rabbitmq
async def test_rabbitmq_accepts_the_service_user() -> None:
    connection = await aio_pika.connect(amqp_url())
    try:
        channel = await connection.channel(publisher_confirms=True)
        queue = await channel.declare_queue(exclusive=True)
        await channel.default_exchange.publish(
            aio_pika.Message(b"ping"), routing_key=queue.name, mandatory=True
        )
        message = await queue.get(timeout=5)
        assert message is not None and message.body == b"ping"
        await message.ack()
    finally:
        await connection.close()


@pytest.mark.mariadb
def test_mariadb_is_durable_and_lets_orbit_create_test_databases() -> None:
    rest = mysql_url().split("://", 1)[1]
    creds, hostpart = rest.split("@", 1)
    user, password = creds.split(":", 1)
    hostport, database = hostpart.split("/", 1)
    host, port = hostport.split(":")
    conn = pymysql.connect(host=host, port=int(port), user=user, password=password)
    try:
        cur = conn.cursor()
        name = f"orbit_t_{uuid.uuid4().hex[:12]}"
        cur.execute(f"CREATE DATABASE `{name}`")
        cur.execute(f"DROP DATABASE `{name}`")
        cur.execute("SELECT @@innodb_flush_log_at_trx_commit")
        assert cur.fetchone() == (1,)
    finally:
        conn.close()
