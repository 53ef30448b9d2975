"""The call plan the Dispatcher pins at admission and hands to ``POST /v1/calls``.

The cell dials ``trunk.dial_prefix + callee`` with the raw ``caller_id``;
``agent`` is the task's ``agent.config`` object as is. The plan's digest
(recording_upload and tags left out, since a retry may carry a fresh presigned
URL) decides whether a second originate with the same call_id is the same call.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cell.agent.config import AgentConfig, parse_agent_config
from cell.errors import InvalidPlanError
from cell.fields import Reader

CALL_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.:-]{0,127}")
PRINTABLE = re.compile(r"[\x21-\x7e]{1,64}")  # raw caller id / callee: printable, no spaces
MAX_MS = 24 * 3600 * 1000
PLAN_FIELDS = frozenset(
    {
        "call_id",
        "trunk",
        "caller_id",
        "callee",
        "ring_timeout_ms",
        "max_duration_ms",
        "agent",
        "recording_upload",
        "tags",
    }
)
TRUNK_FIELDS = frozenset(
    {
        "trunk_id",
        "dial_prefix",
        "server_host",
        "server_port",
        "transport",
        "auth_mode",
        "registration_required",
        "media_profile",
    }
)
UPLOAD_FIELDS = frozenset({"upload_id", "url", "headers"})


@dataclass(frozen=True)
class TrunkSpec:
    trunk_id: str
    dial_prefix: str
    server_host: str | None = None
    server_port: int | None = None
    transport: str | None = None
    auth_mode: str | None = None
    registration_required: bool | None = None
    media_profile: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class UploadTarget:
    """Where to PUT a recording: a presigned URL (a secret: never logged)."""

    upload_id: str
    url: str
    headers: Mapping[str, str]


@dataclass(frozen=True)
class CallPlan:
    call_id: str
    trunk: TrunkSpec
    caller_id: str
    callee: str
    ring_timeout_ms: int
    max_duration_ms: int
    agent: AgentConfig
    recording_upload: UploadTarget | None
    tags: Mapping[str, str]
    digest: str

    @property
    def dial_string(self) -> str:
        return self.trunk.dial_prefix + self.callee

    def dialing_data(self) -> dict[str, Any]:
        """The data of the ``call.dialing`` event."""
        return {
            "callee": self.callee,
            "dialled": self.dial_string,
            "caller_id": self.caller_id,
            "trunk_id": self.trunk.trunk_id,
            "tags": dict(self.tags),
        }

    def log_entry(self, boot_id: str, at: str) -> dict[str, Any]:
        """The originate log line of this plan."""
        return {"at": at, "boot_id": boot_id, "call_id": self.call_id, **self.dialing_data()}


def _printable(r: Reader, key: str) -> str:
    value = r.string(key, max_len=64)
    if not PRINTABLE.fullmatch(value):
        raise r.fail(key, "must be 1-64 printable ASCII characters without spaces")
    return value


def _trunk(r: Reader) -> TrunkSpec:
    prefix = r.opt_string("dial_prefix", max_len=32) or ""
    if prefix and not PRINTABLE.fullmatch(prefix):
        raise r.fail("dial_prefix", "must be printable ASCII without spaces")
    media = r.opt_child("media_profile")
    return TrunkSpec(
        trunk_id=r.string("trunk_id", max_len=128),
        dial_prefix=prefix,
        server_host=r.opt_string("server_host", max_len=255, allow_empty=False),
        server_port=r.opt_integer("server_port", minimum=1, maximum=65535),
        transport=r.opt_string("transport", max_len=16, allow_empty=False),
        auth_mode=r.opt_string("auth_mode", max_len=32, allow_empty=False),
        registration_required=r.opt_boolean("registration_required"),
        media_profile=dict(media.obj) if media else None,
    )


def parse_upload_target(obj: object, path: str, error: type[InvalidPlanError]) -> UploadTarget:
    r = Reader(obj, path, error, UPLOAD_FIELDS)
    url = r.string("url", max_len=8192)
    if not url.startswith(("http://", "https://")):
        raise r.fail("url", "must be an http(s) URL")
    return UploadTarget(
        upload_id=r.string("upload_id", max_len=256),
        url=url,
        headers=r.string_map("headers"),
    )


def plan_digest(body: Mapping[str, Any]) -> str:
    kept = {k: v for k, v in body.items() if k not in ("recording_upload", "tags")}
    canonical = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_plan(body: object) -> CallPlan:
    """Read a call plan; raises :class:`InvalidPlanError` naming the first bad field."""
    r = Reader(body, "", InvalidPlanError, PLAN_FIELDS)
    call_id = r.string("call_id", max_len=128)
    if not CALL_ID.fullmatch(call_id):
        raise r.fail("call_id", "must match [A-Za-z0-9_-][A-Za-z0-9_.:-]{0,127}")
    upload = r.opt_child("recording_upload")
    return CallPlan(
        call_id=call_id,
        trunk=_trunk(r.child("trunk", TRUNK_FIELDS)),
        caller_id=_printable(r, "caller_id"),
        callee=_printable(r, "callee"),
        ring_timeout_ms=r.integer("ring_timeout_ms", minimum=1, maximum=MAX_MS),
        max_duration_ms=r.integer("max_duration_ms", minimum=1, maximum=MAX_MS),
        agent=parse_agent_config(r.obj.get("agent"), "agent"),
        recording_upload=(
            parse_upload_target(upload.obj, "recording_upload", InvalidPlanError)
            if upload
            else None
        ),
        tags=r.string_map("tags"),
        digest=plan_digest(r.obj),
    )
