"""One definition of an operation for `Client` and `AsyncClient`: an `Operation` descriptor
wraps a `Call` builder and, read from a blocking namespace, is a method that sends the call
and returns its result; read from an asyncio namespace, the same method returns an awaitable.
`Listing` does the same for a keyset listing walked page after page (an iterator or an async
iterator). The types follow: mypy sees `client.schedules.get(id) -> Schedule` and
`async_client.schedules.get(id) -> Awaitable[Schedule]` from the one builder's signature."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, TypeVar, overload

from agentcall.orbit.sdk.client._calls import Call

P = ParamSpec("P")
T = TypeVar("T")
Item = TypeVar("Item")
Item_co = TypeVar("Item_co", covariant=True)


class Page(Protocol[Item_co]):
    @property
    def items(self) -> Sequence[Item_co]: ...

    @property
    def next_cursor(self) -> str | None: ...


class Blocking:
    """A namespace of blocking operations over the client's `_send`."""

    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        self._send = send

    def _walk(self, first: Callable[[str | None], Call[Page[Item]]]) -> Iterator[Item]:
        cursor: str | None = None
        while True:
            page = self._send(first(cursor))
            yield from page.items
            cursor = page.next_cursor
            if cursor is None:
                return


class Asynchronous:
    """A namespace of asyncio operations over the async client's `_send`."""

    def __init__(self, send: Callable[[Call[Any]], Awaitable[Any]]) -> None:
        self._send = send

    async def _walk(self, first: Callable[[str | None], Call[Page[Item]]]) -> AsyncIterator[Item]:
        cursor: str | None = None
        while True:
            page = await self._send(first(cursor))
            for item in page.items:
                yield item
            cursor = page.next_cursor
            if cursor is None:
                return


class Operation(Generic[P, T]):
    """An operation defined once by its `Call` builder (its signature and docstring)."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    if TYPE_CHECKING:

        @overload
        def __get__(self, obj: None, owner: type[Any]) -> Operation[P, T]: ...

        @overload
        def __get__(self, obj: Blocking, owner: type[Any]) -> Callable[P, T]: ...

        @overload
        def __get__(self, obj: Asynchronous, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: Any, owner: type[Any]) -> Any:
        if obj is None:
            return self
        build, send = self.build, obj._send

        @functools.wraps(build)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return send(build(*args, **kwargs))

        return bound


class Listing(Generic[P, Item]):
    """Every item of a keyset listing, page after page: the builder takes the listing's
    arguments and returns the `Call` of one page for a cursor (None: the first page)."""

    def __init__(self, build: Callable[P, Callable[[str | None], Call[Page[Item]]]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    if TYPE_CHECKING:

        @overload
        def __get__(self, obj: None, owner: type[Any]) -> Listing[P, Item]: ...

        @overload
        def __get__(self, obj: Blocking, owner: type[Any]) -> Callable[P, Iterator[Item]]: ...

        @overload
        def __get__(
            self, obj: Asynchronous, owner: type[Any]
        ) -> Callable[P, AsyncIterator[Item]]: ...

    def __get__(self, obj: Any, owner: type[Any]) -> Any:
        if obj is None:
            return self
        build = self.build

        @functools.wraps(build)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return obj._walk(build(*args, **kwargs))

        return bound
