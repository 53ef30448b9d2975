"""A queue's flow settings in the SDK (docs/orbit/flow-control.md): `GET /v1/queues/{id}`
and `PATCH /v1/queues/{id}`. The settings travel as the API's `flow` object (a dict:
max_running_per_key, key_limits, rate, fairness); a change is conditional on the revision
read, and never retried by the SDK (resend after reading the revision again)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentcall.orbit.sdk.client._calls import Call, checked_id, encode


@dataclass(frozen=True, slots=True)
class KeyRunning:
    key: str
    running: int
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class QueueFlowInfo:
    """`flow`: the settings as the API shows them; `flow_revision`: pass it to
    `set_queue_flow`. The running and waiting figures are those of a flow-controlled queue
    (empty otherwise)."""

    id: str
    name: str
    flow_revision: int
    flow: dict[str, Any]
    running_keys: int = 0
    running_by_key: tuple[KeyRunning, ...] = ()
    waiting_by_reason: dict[str, int] = field(default_factory=dict)

    @property
    def controlled(self) -> bool:
        """Any rule on: the queue's leases go through flow control."""
        return any(key != "fairness" for key in self.flow) or bool(self.flow.get("fairness"))

    @classmethod
    def from_json(cls, data: Any) -> QueueFlowInfo:
        return cls(
            data["id"],
            data["name"],
            int(data["flow_revision"]),
            dict(data["flow"]),
            int(data.get("running_keys", 0)),
            tuple(
                KeyRunning(item["key"], int(item["running"]), item.get("limit"))
                for item in data.get("running_by_key", ())
            ),
            {k: int(v) for k, v in data.get("waiting_by_reason", {}).items()},
        )


def _queue_path(queue_id: str) -> str:
    return f"/v1/queues/{checked_id(queue_id, 'queue_id')}"


def _info(data: Any, _: str) -> QueueFlowInfo:
    return QueueFlowInfo.from_json(data)


def get_queue(queue_id: str) -> Call[QueueFlowInfo]:
    return Call("GET", _queue_path(queue_id), _info)


def set_queue_flow(
    queue_id: str, flow: Mapping[str, Any], expected_revision: int
) -> Call[QueueFlowInfo]:
    body = {"expected_revision": str(expected_revision), "flow": dict(flow)}
    return Call(
        "PATCH",
        _queue_path(queue_id),
        _info,
        headers={"Content-Type": "application/json"},
        content=encode(body),
    )
