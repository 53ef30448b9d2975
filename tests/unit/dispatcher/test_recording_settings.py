"""Recording settings (D-REC-1/2): object storage and windows, validated at start."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.recording.storage import StorageConfig
from agentcall.dispatcher.settings import SettingsError, load_settings
from tests.support.dispatcher_factories import D_ID

BASE = {
    "DISPATCHER_ID": D_ID,
    "DISPATCHER_SECRET_KEY": "s",
    "DISPATCHER_SAAS_URL": "http://127.0.0.1:8080",
    "DISPATCHER_AMQP_URL": "amqp://u:p@127.0.0.1:5672/",
    "DISPATCHER_STATE_DB": "/tmp/d.sqlite",
    "DISPATCHER_CELL_URL": "http://127.0.0.1:8090",
}


def test_no_bucket_means_no_object_storage() -> None:
    settings = load_settings(BASE)
    assert StorageConfig.from_settings(settings) is None
    assert (settings.upload_authorization_s, settings.recording_deadline_s) == (900.0, 900.0)


def test_storage_from_env_with_secret_hidden() -> None:
    env = BASE | {
        "DISPATCHER_S3_BUCKET": "recordings",
        "DISPATCHER_S3_ENDPOINT": "http://127.0.0.1:8333/",
        "DISPATCHER_S3_ACCESS_KEY": "agentcall",
        "DISPATCHER_S3_SECRET_KEY": "very-secret-key",
        "DISPATCHER_S3_KEY_PREFIX": "/calls/prod/",
        "DISPATCHER_RECORDING_DEADLINE_S": "2.5",
        "DISPATCHER_UPLOAD_AUTHORIZATION_S": "1",
    }
    settings = load_settings(env)
    config = StorageConfig.from_settings(settings)
    assert config is not None
    assert (config.bucket, config.endpoint, config.key_prefix) == (
        "recordings",
        "http://127.0.0.1:8333",
        "calls/prod",
    )
    assert config.secret_key is not None and config.secret_key.reveal() == "very-secret-key"
    assert "very-secret-key" not in repr(settings) and "very-secret-key" not in repr(config)
    assert settings.recording_deadline_s == 2.5  # windows are configurable for tests


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DISPATCHER_S3_BUCKET", "Bad_Bucket"),
        ("DISPATCHER_S3_BUCKET", "ab"),
        ("DISPATCHER_S3_ENDPOINT", "ftp://x"),
        ("DISPATCHER_S3_KEY_PREFIX", "has space"),
        ("DISPATCHER_RECORDING_DEADLINE_S", "0"),
        ("DISPATCHER_UPLOAD_AUTHORIZATION_S", "-1"),
        ("DISPATCHER_RECORDING_SWEEP_S", "soon"),
    ],
)
def test_invalid_recording_setting_is_named(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        load_settings(BASE | {name: value})
