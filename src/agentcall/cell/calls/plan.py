"""The call plan the Dispatcher pins at admission and hands to ``POST /v1/calls``.

The cell dials ``trunk.dial_prefix + callee`` with the raw ``caller_id``;
``agent`` is the task's ``agent.config`` object as is; ``amd`` (optional) is what the
call does about an answering machine (off, hangup, leave_message), else the cell's
default. The plan's digest (recording_upload and tags left out, since a retry may carry
a fresh presigned URL) decides whether a second originate with the same call_id is the
same call.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcall.cell.agent.config import AgentConfig, AgentConfigCache
from agentcall.cell.domain.errors import InvalidPlanError
from agentcall.cell.domain.fields import Reader
from agentcall.cell.domain.model import AmdAction

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
        "amd",
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
UNSIGNED_FIELDS = frozenset({"recording_upload", "tags"})
# Same text as json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
AGENT_CONFIGS = AgentConfigCache()


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
    amd: AmdAction | None = None  # None: the cell's default (CELL_AMD)

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


def _amd(r: Reader) -> AmdAction | None:
    value = r.opt_string("amd", max_len=32)
    if value is None:
        return None
    try:
        return AmdAction(value)
    except ValueError:
        raise r.fail("amd", "must be off, hangup or leave_message (or absent)") from None


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


def canonical_json(value: object) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the text the plan digest hashes."""
    return _CANONICAL.encode(value)


def _canonical_or_none(value: object) -> str | None:
    try:
        return canonical_json(value)
    except (TypeError, ValueError):  # not JSON (a caller's own Mapping, a cycle): no key
        return None


def plan_digest(body: Mapping[str, Any], agent_json: str | None = None) -> str:
    """sha256 of the canonical JSON of ``body`` without the unsigned fields.

    ``agent_json``, when given, is ``canonical_json(body["agent"])`` already computed:
    the text is then assembled from it instead of encoding the agent config again.
    """
    kept = {k: v for k, v in body.items() if k not in UNSIGNED_FIELDS}
    if agent_json is None or "agent" not in kept or not all(isinstance(k, str) for k in kept):
        canonical = canonical_json(kept)
    else:
        members = (
            canonical_json(k) + ":" + (agent_json if k == "agent" else canonical_json(v))
            for k, v in sorted(kept.items())
        )
        canonical = "{" + ",".join(members) + "}"
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_plan(body: object, agents: AgentConfigCache = AGENT_CONFIGS) -> CallPlan:
    """Read a call plan; raises :class:`InvalidPlanError` naming the first bad field.

    The agent config is read through ``agents`` (read once per distinct config).
    """
    r = Reader(body, "", InvalidPlanError, PLAN_FIELDS)
    call_id = r.string("call_id", max_len=128)
    if not CALL_ID.fullmatch(call_id):
        raise r.fail("call_id", "must match [A-Za-z0-9_-][A-Za-z0-9_.:-]{0,127}")
    upload = r.opt_child("recording_upload")
    trunk = _trunk(r.child("trunk", TRUNK_FIELDS))
    caller_id = _printable(r, "caller_id")
    callee = _printable(r, "callee")
    ring_timeout_ms = r.integer("ring_timeout_ms", minimum=1, maximum=MAX_MS)
    max_duration_ms = r.integer("max_duration_ms", minimum=1, maximum=MAX_MS)
    agent_obj = r.obj.get("agent")
    agent_json = _canonical_or_none(agent_obj)
    return CallPlan(
        call_id=call_id,
        trunk=trunk,
        caller_id=caller_id,
        callee=callee,
        ring_timeout_ms=ring_timeout_ms,
        max_duration_ms=max_duration_ms,
        agent=agents.parse(agent_obj, agent_json, "agent"),
        recording_upload=(
            parse_upload_target(upload.obj, "recording_upload", InvalidPlanError)
            if upload
            else None
        ),
        tags=r.string_map("tags"),
        digest=plan_digest(r.obj, agent_json),
        amd=_amd(r),
    )
