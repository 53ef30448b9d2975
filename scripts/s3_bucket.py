"""Readiness probe for the local S3: succeeds once the bucket exists (creating it if needed).

Usage: s3_bucket.py ENDPOINT ACCESS_KEY SECRET_KEY BUCKET
"""

from __future__ import annotations

import sys

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError


def main(endpoint: str, access: str, secret: str, bucket: str) -> int:
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5),
    )
    try:
        s3.head_bucket(Bucket=bucket)
        return 0
    except ClientError:
        pass
    except BotoCoreError:
        return 1
    try:
        s3.create_bucket(Bucket=bucket)
        s3.head_bucket(Bucket=bucket)
    except (ClientError, BotoCoreError):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
