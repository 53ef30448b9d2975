"""Orbit Task API v1 SDK: `Client` and `AsyncClient` with typed models and errors.

Payload numbers stay exact: responses decode integers as `int` and other numbers as
`Decimal`; requests accept `int` and `Decimal` and refuse `float`. The SDK never retries a
write and never changes a key: after `TransportError` or `UnavailableError`, resend the same
request with the same idempotency key.
"""

from __future__ import annotations

from agentcall.orbit.sdk.client.attempts import (
    Attempt,
    AttemptError,
    AttemptOutcome,
    AttemptPage,
    AttemptWorker,
    Evidence,
    ListAttemptsRequest,
)
from agentcall.orbit.sdk.client.audit import AsyncAudit, Audit, AuditEntry, AuditPage
from agentcall.orbit.sdk.client.bulk import AsyncBulk, Bulk
from agentcall.orbit.sdk.client.bulk_models import (
    BULK_ACTIONS,
    BULK_OUTCOMES,
    BULK_STATES,
    BulkFilter,
    BulkOperation,
    BulkOperationPage,
    BulkPreview,
    BulkRequest,
    BulkStarted,
    BulkTask,
    BulkTaskPage,
)
from agentcall.orbit.sdk.client.client import AsyncClient, Client
from agentcall.orbit.sdk.client.control import (
    BatchItem,
    BatchReceipt,
    ResolveTaskRequest,
    RetryTaskRequest,
)
from agentcall.orbit.sdk.client.errors import (
    APIError,
    BodyTooLargeError,
    IdempotencyConflictError,
    InvalidArgumentError,
    NotFoundError,
    OrbitClientError,
    PermissionDeniedError,
    StateConflictError,
    TransportError,
    UnauthenticatedError,
    UnavailableError,
    UnsupportedMediaTypeError,
)
from agentcall.orbit.sdk.client.inspection import SETTLED_STATES, QueueInfo, WorkerInfo
from agentcall.orbit.sdk.client.models import (
    TASK_STATES,
    CancelTaskRequest,
    ListTasksRequest,
    RetryPolicy,
    SubmitTaskRequest,
    Task,
    TaskPage,
    TaskReceipt,
    TaskSummary,
)
from agentcall.orbit.sdk.client.queues import KeyRunning, QueueFlowInfo
from agentcall.orbit.sdk.client.schedules import AsyncSchedules, Schedules
from agentcall.orbit.sdk.client.schedules_models import (
    FIRING_OUTCOMES,
    OVERLAP_POLICIES,
    SCHEDULE_STATES,
    UNCHANGED,
    Backfill,
    CreateScheduleRequest,
    Firing,
    Schedule,
    SchedulePage,
    ScheduleReceipt,
    ScheduleSpec,
    TaskTemplate,
    TriggerReceipt,
    UpdateScheduleRequest,
)

__all__ = [
    "AsyncBulk",
    "Bulk",
    "BULK_ACTIONS",
    "BULK_OUTCOMES",
    "BULK_STATES",
    "BulkFilter",
    "BulkOperation",
    "BulkOperationPage",
    "BulkPreview",
    "BulkRequest",
    "BulkStarted",
    "BulkTask",
    "BulkTaskPage",
    "APIError",
    "AsyncClient",
    "Attempt",
    "AttemptError",
    "AttemptOutcome",
    "AttemptPage",
    "AttemptWorker",
    "BatchItem",
    "BatchReceipt",
    "BodyTooLargeError",
    "CancelTaskRequest",
    "Evidence",
    "Client",
    "IdempotencyConflictError",
    "InvalidArgumentError",
    "ListAttemptsRequest",
    "ListTasksRequest",
    "ResolveTaskRequest",
    "RetryTaskRequest",
    "NotFoundError",
    "OrbitClientError",
    "PermissionDeniedError",
    "QueueInfo",
    "QueueFlowInfo",
    "KeyRunning",
    "RetryPolicy",
    "SETTLED_STATES",
    "StateConflictError",
    "SubmitTaskRequest",
    "TASK_STATES",
    "Task",
    "TaskPage",
    "TaskReceipt",
    "TaskSummary",
    "TransportError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "WorkerInfo",
    # schedules (docs/orbit/schedules.md)
    "AsyncSchedules",
    "Backfill",
    "CreateScheduleRequest",
    "FIRING_OUTCOMES",
    "Firing",
    "OVERLAP_POLICIES",
    "SCHEDULE_STATES",
    "Schedule",
    "SchedulePage",
    "ScheduleReceipt",
    "ScheduleSpec",
    "Schedules",
    "TaskTemplate",
    "TriggerReceipt",
    "UNCHANGED",
    "UpdateScheduleRequest",
    # audit log (docs/orbit/audit.md)
    "AsyncAudit",
    "Audit",
    "AuditEntry",
    "AuditPage",
]
