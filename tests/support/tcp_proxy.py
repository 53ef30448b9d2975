"""A TCP relay between a process under test and a shared server, to cut a link on purpose.

The shared RabbitMQ is never stopped: a test points one process at a :class:`TcpProxy`
instead, then :meth:`TcpProxy.cut` drops every relayed connection and refuses new ones
(as a broker that went down), and :meth:`TcpProxy.restore` accepts again on the same port;
:meth:`TcpProxy.drop` drops the relayed connections but keeps accepting (a link reset).
:attr:`TcpProxy.refuse`, when set, drops a connection whose client sends a chunk it matches
(e.g. one HTTP route of a server while the others still pass).
:attr:`TcpProxy.delay_s`, when above 0, holds every relayed chunk that long (a slow link: a
handshake that outlasts the client's timeout).
The relay runs its own event loop in a daemon thread, so synchronous and asynchronous
tests use it alike.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from tests.support.ports import free_port

T = TypeVar("T")


class TcpProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self.accepted = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.refuse: Callable[[bytes], bool] | None = None
        self.delay_s = 0.0

    @classmethod
    def for_url(cls, url: str) -> TcpProxy:
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or 5672)

    def url(self, url: str) -> str:
        """``url`` with its host and port replaced by this proxy's."""
        parts = urlsplit(url)
        auth = parts.netloc.rpartition("@")[0]
        netloc = f"{auth}@127.0.0.1:{self.port}" if auth else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def start(self) -> TcpProxy:
        self._thread.start()
        self.restore()
        return self

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def restore(self) -> None:
        """Accept and relay connections (again)."""
        self._run(self._listen())

    def cut(self) -> None:
        """Refuse new connections and drop every open one, at once."""
        self._run(self._cut())

    def drop(self) -> None:
        """Drop every open connection at once; new ones are still accepted."""
        self._run(self._drop())

    def close(self) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def _cut(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        await self._drop()

    async def _drop(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        if self._server is None:
            client_w.transport.abort()
            return
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.transport.abort()
            return
        self.accepted += 1
        self._writers.update((client_w, server_w))
        await asyncio.gather(
            self._pipe(client_r, server_w, client_w), self._pipe(server_r, client_w)
        )
        self._writers.difference_update((client_w, server_w))

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client: asyncio.StreamWriter | None = None,
    ) -> None:
        """Relay one direction; ``client``: this is the client's side, checked by refuse."""
        try:
            while data := await reader.read(65536):
                if client is not None and self.refuse is not None and self.refuse(data):
                    client.transport.abort()
                    break
                if self.delay_s > 0:
                    await asyncio.sleep(self.delay_s)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.transport.abort()
