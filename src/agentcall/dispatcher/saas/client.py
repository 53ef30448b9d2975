"""One shared ``httpx.AsyncClient`` for the four SaaS GETs (D-ID-2, D-CFG-*, D-DISC-1).

Every request carries ``X-DISPATCHER-ID`` and ``X-DISPATCHER-SECRET-KEY``, has no body and
no ETag. A 200 returns the raw body for the caller to validate strictly; anything else
raises a :class:`SaasError` subclass carrying the HTTP status and the error ``code`` of
the contract's error body. Transport failures are translated at this edge. The secret is
never part of an error message or log line.

    DispatcherError
    └── SaasError
        ├── SaasUnavailable   network error, timeout, 5xx (503 service_unavailable,
        │                     tenant_quota_unavailable) — retry later, fail closed meanwhile
        ├── SaasRefused       4xx with a contract error code (401, 403, 404, 400)
        └── SaasInvalid       a 200 body that breaks its schema or an identity check
"""

from __future__ import annotations

from urllib.parse import quote

import httpx

from agentcall.dispatcher import contracts
from agentcall.dispatcher.errors import DispatcherError
from agentcall.dispatcher.settings import Secret
from agentcall.dispatcher.telemetry.port import NO_TELEMETRY, Telemetry


class SaasError(DispatcherError):
    """A SaaS read failed; admission stays closed for what depended on it (D-CFG-4, D-DISC-9)."""

    def __init__(self, resource: str, status: int | None, code: str, message: str) -> None:
        self.resource = resource
        self.status = status
        self.code = code
        super().__init__(f"{resource}: {code} (HTTP {status}): {message}")


class SaasUnavailable(SaasError):
    """The SaaS could not answer now. Fix: check DISPATCHER_SAAS_URL and the SaaS health."""


class SaasRefused(SaasError):
    """The SaaS refused the request (401/403/404/400).

    Fix: check DISPATCHER_ID / the secret (401), that this D is enabled (403), that the
    resource is assigned to this D (404 resource_not_found), or the cursor (400).
    """

    @property
    def not_found(self) -> bool:
        return self.status == 404 and self.code == "resource_not_found"


class SaasInvalid(SaasError):
    """A 200 body failed validation; the SaaS must send a body matching contracts/dispatcher."""


class SaasClient:
    """The four GETs; create one per process and close it at shutdown."""

    def __init__(
        self,
        base_url: str,
        dispatcher_id: str,
        secret: Secret,
        timeout_s: float,
        transport: httpx.AsyncBaseTransport | None = None,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self.dispatcher_id = dispatcher_id
        self._telemetry = telemetry
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers={"X-DISPATCHER-ID": dispatcher_id, "X-DISPATCHER-SECRET-KEY": secret.reveal()},
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 3.0)),
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
            transport=transport,
            follow_redirects=False,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def sip(self) -> bytes:
        return await self._get("sip", "/internal/v1/dispatcher/sip", contracts.Kind.CONFIG_ERROR)

    async def task(self, task_id: str) -> bytes:
        path = f"/internal/v1/dispatcher/task/{quote(task_id, safe='')}"
        return await self._get("task", path, contracts.Kind.CONFIG_ERROR)

    async def quota(self, tenant_id: str) -> bytes:
        path = f"/internal/v1/dispatcher/tenant/{quote(tenant_id, safe='')}/quota"
        return await self._get("quota", path, contracts.Kind.CONFIG_ERROR)

    async def discovery(self, after: int) -> bytes:
        path = f"/internal/v1/dispatcher/tasks?after={after}"
        return await self._get("discovery", path, contracts.Kind.DISCOVERY_ERROR)

    async def _get(self, resource: str, path: str, error_kind: str) -> bytes:
        try:
            return await self._read(resource, path, error_kind)
        except SaasError as exc:
            status = str(exc.status) if exc.status is not None else exc.code
            self._telemetry.saas_read_failed(resource, status)
            raise

    async def _read(self, resource: str, path: str, error_kind: str) -> bytes:
        try:
            response = await self._http.get(path)
        except httpx.TimeoutException as exc:
            raise SaasUnavailable(resource, None, "timeout", type(exc).__name__) from exc
        except httpx.HTTPError as exc:
            raise SaasUnavailable(resource, None, "transport_error", type(exc).__name__) from exc
        if response.status_code == 200:
            return response.content
        raise _error(resource, response, error_kind)


def _error(resource: str, response: httpx.Response, error_kind: str) -> SaasError:
    status = response.status_code
    try:
        body = contracts.decode(error_kind, response.content)
        assert isinstance(body, dict)
        code, message = body["error"]["code"], body["error"]["message"][:200]
    except contracts.ContractError:
        code, message = "invalid_error_body", "error body does not match its contract"
    if status >= 500:
        return SaasUnavailable(resource, status, code, message)
    if 400 <= status < 500:
        return SaasRefused(resource, status, code, message)
    return SaasUnavailable(resource, status, "unexpected_status", message)
