"""The fixed identities of a call's recording (pure): derived from the call, never re-drawn.

Because they are functions of the call_id, a D that restarts at any point authorizes the
same upload_id and object_key again (D-REC-1: one asset per recording, never a second).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class RecordingKeys:
    recording_id: str
    upload_id: str
    object_key: str


def _segment(value: str) -> str:
    cleaned = _UNSAFE.sub("_", value)[:128]
    return cleaned if cleaned.strip(".") else "_"


def recording_keys(prefix: str, tenant_id: str, task_id: str, call_id: str) -> RecordingKeys:
    """``<prefix>/<tenant_id>/<task_id>/<call_id>.wav`` with unsafe characters replaced."""
    key = "/".join((prefix.strip("/"), _segment(tenant_id), _segment(task_id), _segment(call_id)))
    return RecordingKeys(
        recording_id=f"rec-{call_id}",
        upload_id=f"upload-{call_id}",
        object_key=f"{key}.wav",
    )
