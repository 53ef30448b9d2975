"""Errors of the worker SDK. Handlers raise the first two to report an outcome; the runtime
raises the others.

    WorkerSdkError                    base
    ├── HandlerFailed                 the handler failed: `code`, `message`, `retryable`
    ├── NeedsReview                   the handler cannot tell the outcome: a human must decide
    ├── RegistryError                 duplicate or malformed (handler, version) registration
    └── WorkerStopped                 the server refused this worker for good (token, scope,
                                      protocol): fix the configuration named in the message
"""

from __future__ import annotations


class WorkerSdkError(Exception):
    """Base of the worker SDK's errors."""


class HandlerFailed(WorkerSdkError):
    """Raise from a handler to report `failed`. Set `retryable=True` only when nothing
    irreversible happened (Orbit then retries within the task's budget and deadlines)."""

    def __init__(self, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable


class NeedsReview(WorkerSdkError):
    """Raise from a handler when the outcome is unknown (e.g. a payment with no answer):
    the task goes to NEEDS_REVIEW and is never re-run blindly. Record evidence first."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class RegistryError(WorkerSdkError):
    """A handler registration is invalid or registered twice: fix the decorator arguments."""


class WorkerStopped(WorkerSdkError):
    """The server will not accept this worker (bad token, queue outside the token's scope,
    unsupported protocol): fix the configuration and start again."""


class Cancelled(WorkerSdkError):
    """Raised by `Context.raise_if_cancelled()` once the attempt was cancelled (shutdown past
    the grace period, attempt timeout, lost lease). Let it propagate: the SDK hands the attempt
    back and Orbit applies the task's recovery safety."""
