"""The worker SDK's pure parts: registry, outcome mapping, exact JSON, URLs, backoff, the
outbox (ack + resend after reconnect) and the cancellation token."""

from __future__ import annotations

import asyncio
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest

import agentcall.orbit.sdk.worker as sdk
from agentcall.orbit.domain.jsonvalue import RawJson, dumps
from agentcall.orbit.sdk.worker.context import AttemptInfo, CancellationToken, Context, TaskInfo
from agentcall.orbit.sdk.worker.errors import Cancelled, HandlerFailed, NeedsReview, RegistryError
from agentcall.orbit.sdk.worker.execution import AttemptRun, invoke
from agentcall.orbit.sdk.worker.link import LinkDown, Outbox, backoff_delay, endpoint
from agentcall.orbit.sdk.worker.outcomes import from_exception, succeeded
from agentcall.orbit.sdk.worker.registry import Registry, load_registry
from agentcall.orbit.sdk.worker.wire import decode, encode

pytestmark = pytest.mark.unit


def test_public_surface_is_explicit() -> None:
    assert sorted(sdk.__all__) == sorted(
        [
            "AttemptInfo",
            "CancellationToken",
            "Cancelled",
            "Context",
            "HandlerFailed",
            "NeedsReview",
            "Registry",
            "RegistryError",
            "TaskInfo",
            "Worker",
            "WorkerConfig",
            "WorkerSdkError",
            "WorkerStopped",
            "load_registry",
        ]
    )
    for name in sdk.__all__:
        assert hasattr(sdk, name)


def test_registry_keys_by_handler_and_version_and_detects_async() -> None:
    registry = Registry()

    @registry.handler("file.convert", "v1")
    async def convert(ctx: Context, payload: Any) -> Any:
        return payload

    @registry.handler("file.convert", "v2")
    def convert_v2(ctx: Context, payload: Any) -> Any:
        return payload

    assert len(registry) == 2
    assert registry.get("file.convert", "v1") is not None
    assert registry.get("file.convert", "v1").is_async is True  # type: ignore[union-attr]
    assert registry.get("file.convert", "v2").is_async is False  # type: ignore[union-attr]
    assert registry.get("file.convert", "v3") is None
    with pytest.raises(RegistryError, match="registered twice"):
        registry.handler("file.convert", "v1")(convert)


@pytest.mark.parametrize(
    ("name", "version"),
    [("", "v1"), ("-bad", "v1"), ("a b", "v1"), ("x" * 129, "v1"), ("ok", ""), ("ok", "v" * 65)],
)
def test_registry_rejects_names_that_tasks_cannot_carry(name: str, version: str) -> None:
    with pytest.raises(RegistryError):
        Registry().handler(name, version)


def test_load_registry_errors_say_what_to_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("p2_fake_app")
    module.registry = Registry()  # type: ignore[attr-defined]
    module.other = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "p2_fake_app", module)
    with pytest.raises(RegistryError, match="package.module:registry"):
        load_registry("p2_fake_app")
    with pytest.raises(RegistryError, match="cannot import"):
        load_registry("no_such_module_p2:registry")
    with pytest.raises(RegistryError, match="not an orbit.worker.Registry"):
        load_registry("p2_fake_app:other")
    with pytest.raises(RegistryError, match="no handlers"):
        load_registry("p2_fake_app:registry")


@pytest.mark.parametrize(
    ("exc", "safety", "expected"),
    [
        (
            HandlerFailed("upstream", "503", retryable=True),
            "RECONCILE_ONLY",
            {
                "outcome": "failed",
                "error": {"code": "upstream", "message": "503", "retryable": True},
            },
        ),
        (
            HandlerFailed("bad", "no", retryable=False),
            "IDEMPOTENT",
            {"outcome": "failed", "error": {"code": "bad", "message": "no", "retryable": False}},
        ),
        (
            NeedsReview("ambiguous", "no answer"),
            "IDEMPOTENT",
            {"outcome": "needs_review", "error": {"code": "ambiguous", "message": "no answer"}},
        ),
        (
            RuntimeError("boom"),
            "IDEMPOTENT",
            {
                "outcome": "failed",
                "error": {
                    "code": "handler_exception",
                    "message": "RuntimeError: boom",
                    "retryable": True,
                },
            },
        ),
        (
            RuntimeError("boom"),
            "RECONCILE_ONLY",
            {
                "outcome": "failed",
                "error": {
                    "code": "handler_exception",
                    "message": "RuntimeError: boom",
                    "retryable": False,
                },
            },
        ),
        (Cancelled("shutdown"), "IDEMPOTENT", None),
    ],
)
def test_exceptions_become_outcomes(
    exc: BaseException, safety: str, expected: dict[str, Any] | None
) -> None:
    """An unexpected exception is retryable only for IDEMPOTENT tasks (worker-protocol §4)."""
    assert from_exception(exc, safety) == expected


def test_long_error_messages_are_clipped_to_the_protocol_limit() -> None:
    body = from_exception(HandlerFailed("c", "x" * 5000), "IDEMPOTENT")
    assert body is not None
    assert len(body["error"]["message"]) == 1024  # type: ignore[index,call-overload]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"n": 9007199254740993, "d": Decimal("1.10")}, '{"n":9007199254740993,"d":1.10}'),
        ([1.5, 0.1], "[1.5,0.1]"),
        (("a", None, True), '["a",null,true]'),
    ],
)
def test_results_keep_exact_numbers(value: Any, text: str) -> None:
    assert succeeded(value) == {"outcome": "succeeded", "result": RawJson(text)}
    assert encode(value) == text


@pytest.mark.parametrize("value", [float("nan"), {1: "non-string key"}, object(), "x" * 262_145])
def test_unrepresentable_or_oversized_results_fail_as_invalid_result(value: Any) -> None:
    body = succeeded(value)
    assert body["outcome"] == "failed"
    assert body["error"]["code"] == "invalid_result"  # type: ignore[index,call-overload]
    assert body["error"]["retryable"] is False  # type: ignore[index,call-overload]


def test_payloads_decode_exactly() -> None:
    value = decode('{"n":9007199254740993,"d":1.10,"e":1e2}')
    assert value == {"n": 9007199254740993, "d": Decimal("1.10"), "e": Decimal("1e2")}
    assert dumps(value) == '{"n":9007199254740993,"d":1.10,"e":1E+2}'


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h:8080", "ws://h:8080/v1/workers/connect"),
        ("https://h/", "wss://h/v1/workers/connect"),
        ("https://h/orbit", "wss://h/orbit/v1/workers/connect"),
        ("ws://h:1/v1/workers/connect", "ws://h:1/v1/workers/connect"),
    ],
)
def test_endpoint_url(url: str, expected: str) -> None:
    assert endpoint(url) == expected


@pytest.mark.parametrize("url", ["ftp://h", "h:8080", "http://"])
def test_endpoint_url_rejects_other_schemes(url: str) -> None:
    with pytest.raises(ValueError, match="ORBIT_URL"):
        endpoint(url)


@pytest.mark.parametrize(("attempt", "ceiling"), [(0, 0.1), (3, 0.8), (10, 10.0), (60, 10.0)])
def test_backoff_is_bounded_full_jitter(attempt: int, ceiling: float) -> None:
    delays = [backoff_delay(attempt) for _ in range(200)]
    assert all(0 <= d <= ceiling for d in delays)
    assert max(delays) > ceiling / 4  # jitter spreads over the range


async def test_outbox_resends_unacked_messages_in_order_after_reconnect() -> None:
    """Resend-until-acked (worker-protocol §3.11): a drop loses nothing."""
    outbox, sent = Outbox(), []

    async def lost(text: str) -> None:
        raise ConnectionError("link down")

    await outbox.connected(lost)
    first = asyncio.create_task(outbox.submit({"type": "started", "attempt_id": "a"}))
    second = asyncio.create_task(outbox.submit({"type": "result", "attempt_id": "a"}))
    beat = asyncio.create_task(outbox.submit({"type": "heartbeat"}, resend=False))
    await asyncio.sleep(0)
    outbox.disconnected()
    with pytest.raises(LinkDown):
        await beat

    async def record(text: str) -> None:
        sent.append(text)

    await outbox.connected(record)
    assert [decode(t)["type"] for t in sent] == ["started", "result"]
    for text in sent:
        outbox.acknowledge({"msg_id": decode(text)["msg_id"], "ok": True})
    assert (await first)["ok"] and (await second)["ok"]
    assert len(outbox) == 0


async def test_cancellation_token_wakes_async_and_thread_waiters() -> None:
    token = CancellationToken()
    waiter = asyncio.create_task(token.wait())
    with ThreadPoolExecutor(1) as pool:
        sleeper = asyncio.get_running_loop().run_in_executor(pool, token.wait_sync, 30)
        await asyncio.sleep(0.05)
        token.cancel("shutdown")
        assert await waiter == "shutdown"
        assert await sleeper is True
    token.cancel("again")
    assert token.reason == "shutdown" and token.cancelled


def _run(handler_name: str = "h", safety: str = "IDEMPOTENT") -> AttemptRun:
    task = TaskInfo(
        "t" * 32,
        "q" * 32,
        handler_name,
        "v1",
        "v1",
        safety,
        0,
        3,
        "2026-09-18T00:00:00Z",
        None,
        None,
    )
    return AttemptRun(
        task, AttemptInfo("a" * 32, 1, "l" * 32, "2026-09-17T00:00:30Z"), {"x": Decimal("1.10")}
    )


@pytest.mark.parametrize("is_async", [True, False])
async def test_invoke_runs_sync_handlers_in_threads_and_records_evidence(is_async: bool) -> None:
    registry, recorded = Registry(), []

    def body(ctx: Context, payload: Any) -> Any:
        ctx.add_evidence("k", "note", data={"v": 1.5})
        return {"got": payload["x"], "cancelled": ctx.cancelled}

    if is_async:

        async def handler(ctx: Context, payload: Any) -> Any:
            return body(ctx, payload)
    else:
        handler = body  # type: ignore[assignment]
    registry.handler("h", "v1")(handler)
    registration = registry.get("h", "v1")
    assert registration is not None
    with ThreadPoolExecutor(1) as pool:
        result = await invoke(_run(), registration, recorded.append, pool)
    assert result == {"outcome": "succeeded", "result": RawJson('{"got":1.10,"cancelled":false}')}
    assert recorded == [{"key": "k", "kind": "note", "data": {"v": Decimal("1.5")}}]


async def test_invoke_maps_cancellation_to_hand_back() -> None:
    registry = Registry()

    @registry.handler("h", "v1")
    async def stops(ctx: Context, payload: Any) -> Any:
        ctx.cancel_token.cancel("shutdown")
        ctx.raise_if_cancelled()

    registration = registry.get("h", "v1")
    assert registration is not None
    with ThreadPoolExecutor(1) as pool:
        assert await invoke(_run(), registration, lambda item: None, pool) is None
