"""`Client` (blocking) and `AsyncClient` (asyncio) over httpx. Both build requests and read
responses with `agentcall.orbit.sdk.client._calls`; only the transport call differs. Writes are
never retried by the SDK: on `TransportError` or `UnavailableError` resend with the same key."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx

from agentcall.orbit.sdk.client import _calls, attempts, control, inspection, queues
from agentcall.orbit.sdk.client.attempts import Attempt, AttemptPage, ListAttemptsRequest
from agentcall.orbit.sdk.client.audit import AsyncAudit, Audit
from agentcall.orbit.sdk.client.bulk import AsyncBulk, Bulk
from agentcall.orbit.sdk.client.control import BatchReceipt, ResolveTaskRequest, RetryTaskRequest
from agentcall.orbit.sdk.client.errors import TransportError
from agentcall.orbit.sdk.client.inspection import QueueInfo, WorkerInfo, next_wait_ms, settled
from agentcall.orbit.sdk.client.models import (
    CancelTaskRequest,
    ListTasksRequest,
    SubmitTaskRequest,
    Task,
    TaskPage,
    TaskReceipt,
    TaskSummary,
)
from agentcall.orbit.sdk.client.queues import QueueFlowInfo
from agentcall.orbit.sdk.client.schedules import AsyncSchedules, Schedules

T = TypeVar("T")
Item_co = TypeVar("Item_co", covariant=True)
DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=5.0)


class _Page(Protocol[Item_co]):
    @property
    def items(self) -> Sequence[Item_co]: ...

    @property
    def next_cursor(self) -> str | None: ...


if TYPE_CHECKING:  # DataclassInstance exists for type checkers only
    from _typeshed import DataclassInstance

    class _Paged(DataclassInstance, Protocol):
        """A list request: a frozen dataclass with a `cursor` field."""

        @property
        def cursor(self) -> str | None: ...


R = TypeVar("R", bound="_Paged")


def _pages(fetch: Callable[[R], _Page[Item_co]], request: R) -> Iterator[Item_co]:
    """Every item of a keyset listing, page after page (one loop for every listing)."""
    while True:
        page = fetch(request)
        yield from page.items
        if page.next_cursor is None:
            return
        request = replace(request, cursor=page.next_cursor)


async def _apages(
    fetch: Callable[[R], Awaitable[_Page[Item_co]]], request: R
) -> AsyncIterator[Item_co]:
    """`_pages` for `AsyncClient`."""
    while True:
        page = await fetch(request)
        for item in page.items:
            yield item
        if page.next_cursor is None:
            return
        request = replace(request, cursor=page.next_cursor)


def _timeout(call: _calls.Call[Any]) -> Any:
    """The call's own read timeout (a long-poll), else the client's."""
    if call.timeout is None:
        return httpx.USE_CLIENT_DEFAULT
    return httpx.Timeout(call.timeout, connect=5.0)


def _headers(token: str, origin: str | None) -> dict[str, str]:
    """`origin`: what the client says it is for the audit log (`X-Orbit-Origin`; the
    `orbit` command line sends "cli"); None: a plain API client."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    return headers | ({"X-Orbit-Origin": origin} if origin else {})


class Client:
    """Blocking client. Use as a context manager or call `close()`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        origin: str | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url,
            headers=_headers(token, origin),
            timeout=timeout,
            transport=transport,
        )
        self.schedules = Schedules(self._send)  # docs/orbit/schedules.md
        self.bulk = Bulk(self._send)  # docs/orbit/bulk.md
        self.audit = Audit(self._send)  # docs/orbit/audit.md

    def _send(self, call: _calls.Call[T]) -> T:
        try:
            response = self._http.request(
                call.method,
                call.path,
                params=call.params,
                headers=call.headers,
                content=call.content,
                timeout=_timeout(call),
            )
        except httpx.TransportError as exc:
            raise TransportError(f"{call.method} {call.path}: {exc!r}; outcome unknown") from exc
        return _calls.read_response(call, response.status_code, response.content)

    def submit_task(self, key: str, request: SubmitTaskRequest) -> TaskReceipt:
        return self._send(_calls.submit_task(key, request))

    def get_task(self, task_id: str) -> Task:
        return self._send(_calls.get_task(task_id))

    def list_tasks(self, request: ListTasksRequest) -> TaskPage:
        return self._send(_calls.list_tasks(request))

    def iter_tasks(self, request: ListTasksRequest) -> Iterator[TaskSummary]:
        """Every task of the listing, page after page."""
        return _pages(self.list_tasks, request)

    def cancel_task(self, task_id: str, key: str, request: CancelTaskRequest) -> TaskReceipt:
        """WAITING/LEASED: CANCELLED at once; RUNNING: cancel_requested_at is set and the
        worker decides the end (docs/orbit/task-control.md §3)."""
        return self._send(_calls.cancel_task(task_id, key, request))

    def retry_task(self, task_id: str, key: str, request: RetryTaskRequest) -> TaskReceipt:
        return self._send(control.retry_task(task_id, key, request))

    def resolve_task(self, task_id: str, key: str, request: ResolveTaskRequest) -> TaskReceipt:
        return self._send(control.resolve_task(task_id, key, request))

    def submit_batch(self, key: str, requests: Sequence[SubmitTaskRequest]) -> BatchReceipt:
        """1-100 tasks, all accepted or none (one key for the batch)."""
        return self._send(control.submit_batch(key, requests))

    def list_attempts(self, request: ListAttemptsRequest) -> AttemptPage:
        """One page of the task's attempts, oldest first (without evidence)."""
        return self._send(attempts.list_attempts(request))

    def iter_attempts(self, task_id: str) -> Iterator[Attempt]:
        """Every attempt of the task, page after page."""
        return _pages(self.list_attempts, ListAttemptsRequest(task_id, limit=100))

    def get_attempt(self, task_id: str, attempt_id: str) -> Attempt:
        """One attempt with its evidence."""
        return self._send(attempts.get_attempt(task_id, attempt_id))

    def wait(self, task_id: str, timeout: float = 60.0) -> Task:
        """The task once it is SUCCEEDED, FAILED, CANCELLED or NEEDS_REVIEW, or as last read
        when `timeout` seconds ran out (check `state`). Long-polls: the server answers as
        soon as the task settles, without polling the database per waiter."""
        deadline = time.monotonic() + timeout
        while True:
            wait_ms = next_wait_ms(deadline - time.monotonic())
            task = self._send(inspection.wait_task(task_id, wait_ms))
            if settled(task) or wait_ms == 0:
                return task

    def list_queues(self) -> list[QueueInfo]:
        """The token's queues with their counts per state."""
        return self._send(inspection.list_queues())

    def get_queue(self, queue_id: str) -> QueueFlowInfo:
        """A queue's flow settings, revision, running per key and waiting by reason."""
        return self._send(queues.get_queue(queue_id))

    def set_queue_flow(
        self, queue_id: str, flow: dict[str, Any], expected_revision: int
    ) -> QueueFlowInfo:
        """Replace a queue's flow settings (queues:admin); StateConflictError when
        `expected_revision` is not theirs any more."""
        return self._send(queues.set_queue_flow(queue_id, flow, expected_revision))

    def list_workers(self) -> list[WorkerInfo]:
        """The namespace's workers connected to any server process, on the token's queues."""
        return self._send(inspection.list_workers())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient:
    """asyncio client. Use as an async context manager or call `aclose()`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: httpx.Limits | None = None,
        origin: str | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=_headers(token, origin),
            timeout=timeout,
            transport=transport,
            limits=limits or httpx.Limits(max_connections=100),
        )
        self.schedules = AsyncSchedules(self._send)  # docs/orbit/schedules.md
        self.bulk = AsyncBulk(self._send)  # docs/orbit/bulk.md
        self.audit = AsyncAudit(self._send)  # docs/orbit/audit.md

    async def _send(self, call: _calls.Call[T]) -> T:
        try:
            response = await self._http.request(
                call.method,
                call.path,
                params=call.params,
                headers=call.headers,
                content=call.content,
                timeout=_timeout(call),
            )
        except httpx.TransportError as exc:
            raise TransportError(f"{call.method} {call.path}: {exc!r}; outcome unknown") from exc
        return _calls.read_response(call, response.status_code, response.content)

    async def submit_task(self, key: str, request: SubmitTaskRequest) -> TaskReceipt:
        return await self._send(_calls.submit_task(key, request))

    async def get_task(self, task_id: str) -> Task:
        return await self._send(_calls.get_task(task_id))

    async def list_tasks(self, request: ListTasksRequest) -> TaskPage:
        return await self._send(_calls.list_tasks(request))

    def iter_tasks(self, request: ListTasksRequest) -> AsyncIterator[TaskSummary]:
        return _apages(self.list_tasks, request)

    async def cancel_task(self, task_id: str, key: str, request: CancelTaskRequest) -> TaskReceipt:
        return await self._send(_calls.cancel_task(task_id, key, request))

    async def retry_task(self, task_id: str, key: str, request: RetryTaskRequest) -> TaskReceipt:
        return await self._send(control.retry_task(task_id, key, request))

    async def resolve_task(
        self, task_id: str, key: str, request: ResolveTaskRequest
    ) -> TaskReceipt:
        return await self._send(control.resolve_task(task_id, key, request))

    async def submit_batch(self, key: str, requests: Sequence[SubmitTaskRequest]) -> BatchReceipt:
        return await self._send(control.submit_batch(key, requests))

    async def list_attempts(self, request: ListAttemptsRequest) -> AttemptPage:
        return await self._send(attempts.list_attempts(request))

    def iter_attempts(self, task_id: str) -> AsyncIterator[Attempt]:
        return _apages(self.list_attempts, ListAttemptsRequest(task_id, limit=100))

    async def get_attempt(self, task_id: str, attempt_id: str) -> Attempt:
        return await self._send(attempts.get_attempt(task_id, attempt_id))

    async def wait(self, task_id: str, timeout: float = 60.0) -> Task:
        """`Client.wait` for asyncio."""
        deadline = time.monotonic() + timeout
        while True:
            wait_ms = next_wait_ms(deadline - time.monotonic())
            task = await self._send(inspection.wait_task(task_id, wait_ms))
            if settled(task) or wait_ms == 0:
                return task

    async def list_queues(self) -> list[QueueInfo]:
        return await self._send(inspection.list_queues())

    async def get_queue(self, queue_id: str) -> QueueFlowInfo:
        return await self._send(queues.get_queue(queue_id))

    async def set_queue_flow(
        self, queue_id: str, flow: dict[str, Any], expected_revision: int
    ) -> QueueFlowInfo:
        return await self._send(queues.set_queue_flow(queue_id, flow, expected_revision))

    async def list_workers(self) -> list[WorkerInfo]:
        return await self._send(inspection.list_workers())

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
