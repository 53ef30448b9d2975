"""Handlers registered by (handler, handler_version), sync or async.

    registry = Registry()

    @registry.handler("file.convert", "v1")
    async def convert(ctx: Context, payload: Any) -> Any: ...

    @registry.handler("report.build", "v2")
    def build(ctx: Context, payload: Any) -> Any: ...   # runs in a thread

`orbit worker --app module:registry` loads such a registry.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from agentcall.orbit.sdk.worker.errors import RegistryError

if TYPE_CHECKING:
    from agentcall.orbit.sdk.worker.context import Context

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")

Handler = Callable[["Context", Any], Any]
AsyncHandler = Callable[["Context", Any], Awaitable[Any]]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Registration:
    handler: str
    handler_version: str
    function: Callable[..., Any]
    is_async: bool


class Registry:
    """The handlers one worker process serves."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], Registration] = {}

    def handler(self, name: str, version: str) -> Callable[[F], F]:
        """Decorator registering `function` for tasks with this handler and handler_version."""
        _check_name(name, 128, "handler")
        _check_name(version, 64, "handler_version")

        def register(function: F) -> F:
            key = (name, version)
            if key in self._entries:
                raise RegistryError(f"handler {name!r} version {version!r} is registered twice")
            is_async = inspect.iscoroutinefunction(function)
            self._entries[key] = Registration(name, version, function, is_async)
            return function

        return register

    def get(self, name: str, version: str) -> Registration | None:
        return self._entries.get((name, version))

    def __iter__(self) -> Iterator[Registration]:
        return iter(sorted(self._entries.values(), key=lambda r: (r.handler, r.handler_version)))

    def __len__(self) -> int:
        return len(self._entries)


def _check_name(value: str, limit: int, what: str) -> None:
    if not isinstance(value, str) or not 1 <= len(value) <= limit or not _NAME.match(value):
        raise RegistryError(
            f"{what} {value!r} must be 1-{limit} characters, start with an ASCII letter or "
            "digit and contain only letters, digits and _ . : -"
        )


def load_registry(spec: str) -> Registry:
    """Import `module:attribute` and return the Registry it names."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise RegistryError(f"--app {spec!r} must look like 'package.module:registry'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RegistryError(f"--app: cannot import {module_name!r}: {exc}") from exc
    value = getattr(module, attribute, None)
    if not isinstance(value, Registry):
        raise RegistryError(f"--app: {spec!r} is not an orbit.worker.Registry")
    if not len(value):
        raise RegistryError(f"--app: {spec!r} has no handlers registered")
    return value
