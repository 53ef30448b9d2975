"""An in-memory cell behind the :class:`~.port.CellPort`, for tests (as httpx ships
``MockTransport``): the one fake every Dispatcher test drives the D's cell side with.

A test states what the cell knows — its boot ids (``boots``, one taken per ``boot_id()``
call, the last one kept), its ``calls``, ``orphan_list`` and ``event_list`` — and how it
answers: ``answer`` decides each originate (a :class:`CellCall`, or the
:class:`CellPortError` it raises), ``upload`` each recording PUT request, and a hang-up of a
call in ``gone`` is refused as ``not_found``. Everything the D asked is recorded:
``originated``, ``sent`` (batches), ``acked``, ``hung``, ``requests`` (upload ids, the
last URL in ``last_url``), ``deleted`` (orphans) and ``puts`` (PUTs done through
:meth:`FakeCell.put`, as the real cell PUTs its file).

:class:`FakeBatchingCell` adds the batch requests of :class:`~.port.BatchingCell`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import httpx

from agentcall.dispatcher.cell.port import (
    CellCall,
    CellEvent,
    CellOrphan,
    CellPlan,
    CellPortError,
    CellRejected,
    CellUpload,
)
from agentcall.dispatcher.domain.identity import CellIdentity

Answer = Callable[[CellPlan], CellCall | CellPortError]
Upload = Callable[["FakeCell", str, str, dict[str, str]], Awaitable[CellUpload]]


@dataclass
class FakeCell:
    """A CellPort whose answers the test chooses (see the module docstring)."""

    boots: list[str] = field(default_factory=lambda: ["boot-1"])
    calls: list[CellCall] = field(default_factory=list)
    orphan_list: list[CellOrphan] = field(default_factory=list)
    answer: Answer | None = None
    upload: Upload | None = None
    gone: Collection[str] = ()
    event_list: list[CellEvent] = field(default_factory=list)
    originated: list[str] = field(default_factory=list)
    sent: list[list[str]] = field(default_factory=list)
    acked: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    last_url: str | None = None
    puts: int = 0
    reported: CellIdentity = CellIdentity(None, None)

    async def boot_id(self) -> str:
        return self.boots.pop(0) if len(self.boots) > 1 else self.boots[0]

    def _answer(self, plan: CellPlan) -> CellCall | CellPortError:
        if self.answer is None:
            raise AssertionError("this cell takes no originate (nothing may be dialled)")
        return self.answer(plan)

    async def originate(self, plan: CellPlan) -> CellCall:
        self.originated.append(plan.call_id)
        result = self._answer(plan)
        if isinstance(result, CellPortError):
            raise result
        return result

    async def hangup(self, call_id: str) -> None:
        self.hung.append(call_id)
        if call_id in self.gone:
            raise CellRejected("not_found", "no such call")

    async def get_call(self, call_id: str) -> CellCall | None:
        return next((c for c in self.calls if c.call_id == call_id), None)

    async def list_calls(self) -> list[CellCall]:
        return list(self.calls)

    async def events(self, after: int, boot_id: str | None = None) -> AsyncIterator[CellEvent]:
        for event in list(self.event_list):
            if event.seq > after and (boot_id is None or event.boot_id == boot_id):
                yield event

    async def ack(self, call_id: str) -> None:
        self.acked.append(call_id)

    async def upload_recording(
        self, call_id: str, upload_id: str, url: str, headers: Mapping[str, str]
    ) -> CellUpload:
        self.requests.append(upload_id)
        self.last_url = url
        if self.upload is None:
            raise CellRejected("recording_not_found", "no recording for that call")
        return await self.upload(self, call_id, upload_id, dict(headers))

    async def put(self, url: str, body: bytes) -> httpx.Response:
        """PUT ``body`` to ``url``, as the real cell does with a recording's file."""
        self.puts += 1
        async with httpx.AsyncClient(timeout=10) as http:
            return await http.put(url, content=body)

    async def orphans(self) -> list[CellOrphan]:
        return list(self.orphan_list)

    async def delete_orphan(self, call_id: str) -> None:
        self.deleted.append(call_id)

    async def identity(self) -> CellIdentity:
        return self.reported

    async def aclose(self) -> None:
        return None


@dataclass
class FakeBatchingCell(FakeCell):
    """A :class:`FakeCell` that also originates and acknowledges in batches."""

    async def originate_many(self, plans: Sequence[CellPlan]) -> list[CellCall | CellPortError]:
        self.sent.append([p.call_id for p in plans])
        return [self._answer(p) for p in plans]

    async def ack_many(self, call_ids: Sequence[str]) -> list[CellPortError | None]:
        self.acked.extend(call_ids)
        return [None] * len(call_ids)
