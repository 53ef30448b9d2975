"""``CellClient``: the async client the Dispatcher uses to drive a cell."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx

from agentcall.cell.client import _batch
from agentcall.cell.client._errors import CellClientError, CellProtocolError, CellUnavailableError
from agentcall.cell.client._events import EventStream
from agentcall.cell.client._models import (
    CallInfo,
    CellInfo,
    Orphan,
    Plan,
    UploadResult,
    UploadTarget,
)
from agentcall.cell.client._reconnect import STREAM, Backoff
from agentcall.cell.domain.model import CallState


def _error(response: httpx.Response) -> Exception:
    try:
        body = response.json().get("error") or {}
    except (ValueError, AttributeError):
        body = {}
    if not isinstance(body, dict):
        body = {}
    return _batch.error_of(response.status_code, body, response.reason_phrase)


_JSON = {"content-type": "application/json"}


class CellClient:
    """Async client of one cell. Use as ``async with CellClient(url) as cell: ...``.

    ``timeout_s`` bounds every HTTP request except uploads (``upload_timeout_s``);
    ``reconnect`` is the event stream's reconnect policy (``_reconnect.py``; any object with
    its ``delay(failures, jitter)``, e.g. the embedding service's own policy).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 10.0,
        upload_timeout_s: float = 180.0,
        transport: httpx.AsyncBaseTransport | None = None,
        reconnect: Backoff = STREAM,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._reconnect = reconnect
        self._upload_timeout = upload_timeout_s
        self._http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout_s, transport=transport
        )

    async def __aenter__(self) -> CellClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise CellUnavailableError(f"{method} {path}: the cell did not answer in time") from exc
        except httpx.HTTPError as exc:
            raise CellUnavailableError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise _error(response)
        return response

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise CellProtocolError(f"{method} {path}: the answer is not JSON") from exc

    async def originate(self, plan: Plan) -> CallInfo:
        """Dial ``plan`` once. Repeating the same plan returns the existing call;
        a call_id dialled before raises :class:`AlreadyDialledError`."""
        return CallInfo.from_json(await self._json("POST", "/v1/calls", json=plan.to_json()))

    async def originate_many(self, plans: Sequence[Plan]) -> list[CallInfo | CellClientError]:
        """Dial many plans in as few requests as possible (``POST /v1/calls/batch``).

        One entry per plan, in order: the call, or the error :meth:`originate` would have
        raised for it. A request that fails as a whole (cell unreachable, timeout) gives
        its error to each of its plans — for those it is unknown whether they were dialled;
        repeating them is safe, as with :meth:`originate`. Never raises.
        """
        out: list[CallInfo | CellClientError] = []
        for count, body in _batch.chunks("plans", [p.to_json() for p in plans]):
            try:
                answer = await self._json("POST", "/v1/calls/batch", content=body, headers=_JSON)
                out.extend(_batch.originated(item) for item in _batch.results(answer, count))
            except CellClientError as exc:
                out.extend([exc] * count)
        return out

    async def ack_many(self, call_ids: Sequence[str]) -> list[CellClientError | None]:
        """Acknowledge many calls (``POST /v1/calls/ack``): ``None`` per call acknowledged,
        else the error :meth:`ack` would have raised for it. Never raises."""
        out: list[CellClientError | None] = []
        for count, body in _batch.chunks("call_ids", list(call_ids)):
            try:
                answer = await self._json("POST", "/v1/calls/ack", content=body, headers=_JSON)
                out.extend(_batch.item_error(item) for item in _batch.results(answer, count))
            except CellClientError as exc:
                out.extend([exc] * count)
        return out

    async def hangup(self, call_id: str) -> CallInfo:
        """Ask the cell to end a call (ends with reason ``hangup_requested``)."""
        return CallInfo.from_json(await self._json("POST", f"/v1/calls/{call_id}/hangup"))

    async def get_call(self, call_id: str) -> CallInfo:
        return CallInfo.from_json(await self._json("GET", f"/v1/calls/{call_id}"))

    async def list_calls(self, state: CallState | None = None) -> list[CallInfo]:
        params = {"state": state.value} if state else {}
        body = await self._json("GET", "/v1/calls", params=params)
        return [CallInfo.from_json(c) for c in body.get("calls", [])]

    async def ack(self, call_id: str) -> None:
        """Tell the cell the end of this call is durably recorded; it forgets the call."""
        await self._request("POST", f"/v1/calls/{call_id}/ack")

    async def info(self) -> CellInfo:
        return CellInfo.from_json(await self._json("GET", "/v1/info"))

    async def load_config(self, snapshot: Mapping[str, Any]) -> CellInfo:
        """Load the approved SIP snapshot into the cell (``PUT /v1/config``, D-NOTE-9)."""
        await self._json("PUT", "/v1/config", json=dict(snapshot))
        return await self.info()

    async def upload_recording(self, call_id: str, target: UploadTarget) -> UploadResult:
        """PUT the call's recording to ``target`` (at most once; never retried)."""
        body = await self._json(
            "POST",
            f"/v1/calls/{call_id}/recording/upload",
            json=target.to_json(),
            timeout=self._upload_timeout,
        )
        return UploadResult.from_json(body)

    async def orphans(self) -> list[Orphan]:
        body = await self._json("GET", "/v1/orphans")
        return [Orphan.from_json(o) for o in body.get("orphans", [])]

    async def delete_orphan(self, call_id: str) -> None:
        await self._request("DELETE", f"/v1/orphans/{call_id}")

    def events(self, after: int = 0, boot_id: str | None = None) -> EventStream:
        """Events with ``seq > after`` forever, resuming across reconnects.

        Pass the ``boot_id`` the ``after`` belongs to: if the cell restarted since,
        the stream yields a ``cell.restarted`` event and starts the new boot from 1.
        """
        ws_base = "ws" + self.base_url[len("http") :]
        return EventStream(
            f"{ws_base}/v1/events", after=after, boot_id=boot_id, policy=self._reconnect
        )
