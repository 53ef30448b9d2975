"""Exceptions of the Mock SaaS, one rooted tree.

::

    MockSaasError                     root: catch this to catch everything below
    ├── ConfigurationError            bad CLI/env/file setting at start
    ├── ContractFileError             contracts/dispatcher/ missing or unreadable
    ├── AdminError                    an admin API request cannot be honoured
    │   ├── InvalidRequest            a field is missing or malformed (names it)
    │   ├── NotFound                  unknown dispatcher/task/tenant
    │   └── Conflict                  the request contradicts the stored state
    │       ├── IllegalTransition     task status change not allowed
    │       ├── TaskQueueLimit        256 task queues not yet retired (D-MQ-6)
    │       ├── IdempotencyKeyReused  the key was used with another request
    │       └── TaskNotPublishable    call.execute to a stopped/finished/removed task
    ├── ContractError                 an error a Dispatcher sees on the four GETs
    │   ├── Unauthorized              401 unauthorized
    │   ├── DispatcherNotAuthorized   403 dispatcher_not_authorized
    │   ├── ResourceNotFound          404 resource_not_found
    │   ├── InvalidCursor             400 invalid_cursor
    │   ├── TenantQuotaUnavailable    503 tenant_quota_unavailable
    │   └── ServiceUnavailable        503 service_unavailable
    └── BrokerError                   RabbitMQ refused or lost an operation

Each class has a ``hint`` telling the caller how to fix the situation; the wire
mapping (HTTP status + code) lives in :data:`WIRE_ERRORS`, looked up along the MRO.
"""

from __future__ import annotations


class MockSaasError(Exception):
    """Root of every Mock SaaS error."""

    hint = "see docs/mocksaas.md"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigurationError(MockSaasError):
    hint = "fix the option or environment variable named in the message"


class ContractFileError(MockSaasError):
    hint = "check that contracts/dispatcher/ holds the schemas and mq-topology.json"


class AdminError(MockSaasError):
    hint = "fix the admin request"


class InvalidRequest(AdminError):
    hint = "send the field named in the message with a valid value"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


class NotFound(AdminError):
    hint = "create the dispatcher/task first (mocksaas admin dispatcher create / task put)"


class Conflict(AdminError):
    hint = "read the current state (admin show) and send a request that fits it"


class IllegalTransition(Conflict):
    hint = "allowed: running<->paused, running/paused->finished, any->stopped (irreversible)"


class TaskQueueLimit(Conflict):
    hint = "stop a task and wait for its queue retirement before creating another (D-MQ-6)"


class IdempotencyKeyReused(Conflict):
    hint = "send a new Idempotency-Key for a new request; reuse one only to retry the same"


class TaskNotPublishable(Conflict):
    hint = "publish call.execute only to running or paused tasks"


class ContractError(MockSaasError):
    hint = "check the request against the Dispatcher contract"


class Unauthorized(ContractError):
    hint = "send X-DISPATCHER-ID and X-DISPATCHER-SECRET-KEY of a created dispatcher"


class DispatcherNotAuthorized(ContractError):
    hint = "re-enable the dispatcher: mocksaas admin dispatcher update --authorized"


class ResourceNotFound(ContractError):
    hint = "the resource is missing or not assigned to this dispatcher"


class InvalidCursor(ContractError):
    hint = "send after=0 or a next_cursor returned earlier (canonical decimal, <= head)"


class TenantQuotaUnavailable(ContractError):
    hint = "set a quota: mocksaas admin quota set <D> <tenant> --max N"


class ServiceUnavailable(ContractError):
    hint = "retry later with the same cursor"


class BrokerError(MockSaasError):
    hint = "check that RabbitMQ runs and --amqp-url is right"


WIRE_ERRORS: dict[type[MockSaasError], tuple[int, str]] = {
    InvalidRequest: (400, "invalid_request"),
    NotFound: (404, "not_found"),
    TaskQueueLimit: (409, "task_queue_limit"),
    TaskNotPublishable: (409, "task_not_publishable"),
    IdempotencyKeyReused: (409, "idempotency_key_reused"),
    IllegalTransition: (409, "illegal_transition"),
    Conflict: (409, "conflict"),
    Unauthorized: (401, "unauthorized"),
    DispatcherNotAuthorized: (403, "dispatcher_not_authorized"),
    ResourceNotFound: (404, "resource_not_found"),
    InvalidCursor: (400, "invalid_cursor"),
    TenantQuotaUnavailable: (503, "tenant_quota_unavailable"),
    ServiceUnavailable: (503, "service_unavailable"),
    BrokerError: (503, "broker_unavailable"),
    MockSaasError: (500, "internal_error"),
}


def wire_error(exc: MockSaasError) -> tuple[int, str]:
    """HTTP status and error code of ``exc``, looked up along its class hierarchy."""
    for cls in type(exc).__mro__:
        if cls in WIRE_ERRORS:
            return WIRE_ERRORS[cls]
    return 500, "internal_error"
