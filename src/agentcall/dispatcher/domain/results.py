"""Builders of the bodies the D publishes: command.result and call.result (D-CMD-3, D-RES-*).

Pure: identifiers and times are passed in. A body is built once, stored in the outbox and
republished byte for byte (D-RES-1: fixed event_id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from agentcall.dispatcher.domain.admission import Plan
from agentcall.dispatcher.domain.model import ExecuteCommand

COMMAND_SCHEMA = "command-next.v0.1-proposal"
CALL_RESULT_SCHEMA = "call-result.v0.1-proposal"
_NULL_ASSET = (
    "recording_id",
    "upload_id",
    "bucket",
    "object_key",
    "format",
    "channels",
    "sample_rate_hz",
    "duration_ms",
    "size_bytes",
    "checksum_sha256",
)


def rfc3339(moment: datetime) -> str:
    """UTC with millisecond precision and a ``Z`` suffix."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def execute_result(
    *,
    event_id: str,
    command: ExecuteCommand,
    occurred_at: datetime,
    execution_id: str | None,
    reason_code: str | None,
) -> dict[str, Any]:
    """command.result: accepted (execution_id given) or rejected (reason_code given)."""
    if execution_id is not None:
        payload: dict[str, Any] = {"status": "accepted", "reason_code": "accepted"}
        payload["execution_id"] = execution_id
    else:
        payload = {"status": "rejected", "reason_code": reason_code}
    return command_result(
        event_id=event_id,
        command=command,
        occurred_at=occurred_at,
        aggregate=("command", command.command_id, 1),
        payload={"command_id": command.command_id, "command_type": "call.execute", **payload},
    )


class Addressed(Protocol):
    """What a received command says about who sent it and for whom."""

    @property
    def dispatcher_id(self) -> str: ...
    @property
    def tenant_id(self) -> str: ...
    @property
    def tenant_key(self) -> str: ...
    @property
    def trace_id(self) -> str: ...


def command_result(
    *,
    event_id: str,
    command: Addressed,
    occurred_at: datetime,
    aggregate: tuple[str, str, int],
    payload: dict[str, Any],
) -> dict[str, Any]:
    """The command.result envelope shared by call.execute and task.control receipts;
    ``aggregate`` is (type, id, version)."""
    aggregate_type, aggregate_id, aggregate_version = aggregate
    return {
        "schema_version": COMMAND_SCHEMA,
        "event_id": event_id,
        "event_type": "command.result",
        "dispatcher_id": command.dispatcher_id,
        "tenant_id": command.tenant_id,
        "tenant_key": command.tenant_key,
        "trace_id": command.trace_id,
        "occurred_at": rfc3339(occurred_at),
        "aggregate_type": aggregate_type,
        "aggregate_id": aggregate_id,
        "aggregate_version": aggregate_version,
        "payload": payload,
    }


@dataclass(frozen=True)
class TranscriptSegment:
    turn_id: str
    segment_id: str
    role: str
    text: str
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class CallEnd:
    """What the media plane reported when the call ended."""

    started_at: datetime
    ended_at: datetime
    outcome: str
    reason_code: str | None
    transcript: tuple[TranscriptSegment, ...] = ()
    opt_out: bool = False
    # the cell's media/voice figures of the call, kept locally; never in call.result
    quality: Mapping[str, Any] | None = None


def recording_not_created(reason_code: str) -> dict[str, Any]:
    """D-RES-2: no recording was produced; every asset field is null."""
    return {"status": "not_created", "reason_code": reason_code, **dict.fromkeys(_NULL_ASSET)}


def recording_unavailable(
    error_code: str, recording_id: str, upload_id: str | None, media: Mapping[str, Any]
) -> dict[str, Any]:
    """D-REC-2: a recording was expected but is not in the bucket."""
    body: dict[str, Any] = {"status": "unavailable", "error_code": error_code}
    body.update(dict.fromkeys(_NULL_ASSET))
    body.update(recording_id=recording_id, upload_id=upload_id)
    for key in ("format", "channels", "sample_rate_hz", "duration_ms"):
        body[key] = media.get(key)
    return body


def recording_uploaded(
    *, recording_id: str, upload_id: str, bucket: str, object_key: str, media: Mapping[str, Any]
) -> dict[str, Any]:
    """D-REC-2 success; ``media`` carries format, channels, rate, duration, size, sha256."""
    return {
        "status": "uploaded",
        "recording_id": recording_id,
        "upload_id": upload_id,
        "bucket": bucket,
        "object_key": object_key,
        "format": media["format"],
        "channels": media["channels"],
        "sample_rate_hz": media["sample_rate_hz"],
        "duration_ms": media["duration_ms"],
        "size_bytes": media["size_bytes"],
        "checksum_sha256": media["checksum_sha256"],
    }


def _transcript(segments: Sequence[TranscriptSegment]) -> list[dict[str, Any]]:
    return [
        {
            "turn_id": s.turn_id,
            "segment_id": s.segment_id,
            "role": s.role,
            "text": s.text,
            "start_ms": s.start_ms,
            "end_ms": s.end_ms,
        }
        for s in segments
    ]


def call_result(
    *,
    event_id: str,
    dispatcher_id: str,
    execution_id: str,
    call_id: str,
    plan: Plan,
    end: CallEnd,
    recording: Mapping[str, Any],
    occurred_at: datetime,
) -> dict[str, Any]:
    """The single final call.result of one accepted execution (D-RES-1)."""
    duration = max(0, int((end.ended_at - end.started_at).total_seconds() * 1000))
    return {
        "schema_version": CALL_RESULT_SCHEMA,
        "event_id": event_id,
        "event_type": "call.result",
        "dispatcher_id": dispatcher_id,
        "tenant_id": plan.tenant_id,
        "tenant_key": plan.tenant_key,
        "trace_id": plan.trace_id,
        "occurred_at": rfc3339(occurred_at),
        "aggregate_type": "call",
        "aggregate_id": call_id,
        "aggregate_version": 1,
        "payload": {
            "source_command_id": plan.command_id,
            "execution_id": execution_id,
            "call_id": call_id,
            "task_id": plan.task_id,
            "task_revision": plan.task_revision,
            "agent_version_id": plan.agent_version_id,
            "route_policy_id": plan.route_policy_id,
            "caller_profile_id": plan.caller_profile_id,
            "callee": plan.callee,
            "trunk_id": plan.trunk_id,
            "started_at": rfc3339(end.started_at),
            "ended_at": rfc3339(end.ended_at),
            "duration_ms": duration,
            "outcome": end.outcome,
            "reason_code": end.reason_code,
            "transcript": _transcript(end.transcript),
            "opt_out": end.opt_out,
            "recording": dict(recording),
        },
    }
