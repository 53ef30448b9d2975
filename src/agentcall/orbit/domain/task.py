"""The task record and its two wire views: the full task and the list summary."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from agentcall.orbit.domain.flow_settings import DEFAULT_TASK_FLOW, TaskFlow
from agentcall.orbit.domain.jsonvalue import JsonValue, RawJson
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy, SubmitRequest, TaskTimes
from agentcall.orbit.domain.times import format_time


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    namespace_id: str
    queue_id: str
    state: TaskState
    revision: int
    handler: str
    handler_version: str
    payload_version: str
    payload_text: str
    business_key: str | None
    available_at: datetime
    start_deadline_at: datetime | None
    deadline_at: datetime
    task_timeout_ms: int
    recovery_safety: RecoverySafety
    retry: RetryPolicy
    attempt_count: int
    result_text: str | None
    cancel_requested_at: datetime | None
    completed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    # execution (docs/orbit/execution-history.md): why a task FAILED / NEEDS_REVIEW
    error_code: str | None = None
    error_message: str | None = None
    attempt_error_text: str | None = None  # the deciding attempt's {code,message,retryable}
    current_attempt_id: str | None = None
    trace_parent: str | None = None  # W3C traceparent of the submit span (tracing on)
    flow: TaskFlow = DEFAULT_TASK_FLOW  # priority, concurrency and fairness keys


def new_task(
    task_id: str, namespace_id: str, request: SubmitRequest, times: TaskTimes, now: datetime
) -> Task:
    """The WAITING task a first acceptance creates (revision 1)."""
    return Task(
        id=task_id,
        namespace_id=namespace_id,
        queue_id=request.queue_id,
        state=TaskState.WAITING,
        revision=1,
        handler=request.handler,
        handler_version=request.handler_version,
        payload_version=request.payload_version,
        payload_text=request.payload_text,
        business_key=request.business_key,
        available_at=times.available_at,
        start_deadline_at=times.start_deadline_at,
        deadline_at=times.deadline_at,
        task_timeout_ms=request.task_timeout_ms,
        recovery_safety=request.recovery_safety,
        retry=request.retry,
        attempt_count=0,
        result_text=None,
        cancel_requested_at=None,
        completed_at=None,
        created_at=now,
        updated_at=now,
        trace_parent=request.trace_parent,
        flow=request.flow,
    )


def cancelled(task: Task, revision: int, now: datetime) -> Task:
    return replace(
        task,
        state=TaskState.CANCELLED,
        revision=revision,
        cancel_requested_at=now,
        completed_at=now,
        updated_at=now,
    )


def task_view(task: Task) -> dict[str, JsonValue]:
    """The full task object; optional fields are omitted when unset."""
    retry = task.retry
    view: dict[str, JsonValue] = _head(task)
    view["payload"] = RawJson(task.payload_text)
    _optional(view, "business_key", task.business_key)
    view["available_at"] = format_time(task.available_at)
    if task.start_deadline_at is not None:
        view["start_deadline_at"] = format_time(task.start_deadline_at)
    view["deadline_at"] = format_time(task.deadline_at)
    view["recovery_safety"] = task.recovery_safety.value
    view["retry"] = {
        "max_attempts": retry.max_attempts,
        "initial_delay_ms": retry.initial_delay_ms,
        "max_delay_ms": retry.max_delay_ms,
        "attempt_timeout_ms": retry.attempt_timeout_ms,
    }
    view["attempt_count"] = task.attempt_count
    _flow(view, task.flow)
    if task.result_text is not None:
        view["result"] = RawJson(task.result_text)
    if task.error_code is not None:
        view["error"] = {"code": task.error_code, "message": task.error_message or ""}
    if task.attempt_error_text is not None:
        view["attempt_error"] = RawJson(task.attempt_error_text)
    _optional(view, "current_attempt_id", task.current_attempt_id)
    _tail(view, task)
    return view


@dataclass(frozen=True, slots=True)
class TaskSummary:
    """What a list item shows: no payload, result or retry (O-LST-1)."""

    id: str
    queue_id: str
    state: TaskState
    revision: int
    handler: str
    handler_version: str
    business_key: str | None
    available_at: datetime
    start_deadline_at: datetime | None
    deadline_at: datetime
    attempt_count: int
    cancel_requested_at: datetime | None
    completed_at: datetime | None
    created_at: datetime
    updated_at: datetime


def summarize(task: Task) -> TaskSummary:
    return TaskSummary(
        task.id,
        task.queue_id,
        task.state,
        task.revision,
        task.handler,
        task.handler_version,
        task.business_key,
        task.available_at,
        task.start_deadline_at,
        task.deadline_at,
        task.attempt_count,
        task.cancel_requested_at,
        task.completed_at,
        task.created_at,
        task.updated_at,
    )


def summary_view(task: TaskSummary) -> dict[str, JsonValue]:
    """The list item: no payload, result or retry."""
    view: dict[str, JsonValue] = {
        "id": task.id,
        "queue_id": task.queue_id,
        "state": task.state.value,
        "revision": str(task.revision),
        "handler": task.handler,
        "handler_version": task.handler_version,
    }
    _optional(view, "business_key", task.business_key)
    view["available_at"] = format_time(task.available_at)
    if task.start_deadline_at is not None:
        view["start_deadline_at"] = format_time(task.start_deadline_at)
    view["deadline_at"] = format_time(task.deadline_at)
    view["attempt_count"] = task.attempt_count
    _tail(view, task)
    return view


def _head(task: Task) -> dict[str, JsonValue]:
    return {
        "id": task.id,
        "namespace_id": task.namespace_id,
        "queue_id": task.queue_id,
        "state": task.state.value,
        "revision": str(task.revision),
        "handler": task.handler,
        "handler_version": task.handler_version,
        "payload_version": task.payload_version,
    }


def _tail(view: dict[str, JsonValue], task: Task | TaskSummary) -> None:
    if task.cancel_requested_at is not None:
        view["cancel_requested_at"] = format_time(task.cancel_requested_at)
    if task.completed_at is not None:
        view["completed_at"] = format_time(task.completed_at)
    view["created_at"] = format_time(task.created_at)
    view["updated_at"] = format_time(task.updated_at)


def _flow(view: dict[str, JsonValue], flow: TaskFlow) -> None:
    """The flow fields when any is set (the common task's view stays the spec's, O-API-3):
    the priority, then the keys and weight that are set."""
    if flow is DEFAULT_TASK_FLOW:
        return
    view["priority"] = flow.priority
    _optional(view, "concurrency_key", flow.concurrency_key)
    _optional(view, "fairness_key", flow.fairness_key)
    if flow.fairness_key is not None:
        view["fairness_weight"] = flow.fairness_weight


def _optional(view: dict[str, JsonValue], key: str, value: str | None) -> None:
    if value is not None:
        view[key] = value
