"""`client.bulk`: the bulk operations of `Client` (blocking) and `AsyncClient` (asyncio), each
defined once by its `Call` builder in `agentcall.orbit.sdk.client.bulk_calls`
(docs/orbit/bulk.md).

    client.bulk.preview(BulkRequest(...))             -> BulkPreview (count + sample)
    client.bulk.start(key, BulkRequest(...))          -> BulkStarted
    client.bulk.get(id) / list(...) / iter()          -> BulkOperation, BulkOperationPage, ...
    client.bulk.tasks(id, outcome) / iter_tasks(...)  -> BulkTaskPage, BulkTask, ...
    client.bulk.cancel(id)                            -> BulkOperation

On `AsyncClient` the same names return awaitables (`iter`, `iter_tasks`: async iterators)."""

from __future__ import annotations

from agentcall.orbit.sdk.client import bulk_calls as calls
from agentcall.orbit.sdk.client.binding import (
    Asynchronous,
    Blocking,
    Listing,
    Operation,
)

__all__ = ["AsyncBulk", "Bulk"]


class _Operations:
    """Every bulk operation call, once; the subclass decides how a call is sent."""

    preview = Operation(calls.preview)
    start = Operation(calls.start)
    get = Operation(calls.get)
    list = Operation(calls.list_page)
    iter = Listing(calls.every)
    tasks = Operation(calls.tasks)
    iter_tasks = Listing(calls.every_task)
    cancel = Operation(calls.cancel)


class Bulk(_Operations, Blocking):
    """`Client.bulk`: every method sends at once and returns the result."""


class AsyncBulk(_Operations, Asynchronous):
    """`AsyncClient.bulk`: every method returns an awaitable (`iter`, `iter_tasks`: async
    iterators)."""
