"""The Dispatcher's logging: ``log(logger, level, event, **fields)`` writes one record, and
every rendered line passes through a redactor that replaces the dispatcher secret (and any
value registered with :func:`register_secret`) by ``***``, so a secret can never reach a log
by accident. Lines are formatted by :mod:`agentcall.logs`, shared by all services.
"""

from __future__ import annotations

import logging
from typing import Any

from agentcall import logs

_SECRETS: set[str] = set()
_QUIET = ("aiormq", "aio_pika", "httpx", "httpcore", "uvicorn.access")


def register_secret(value: str) -> None:
    if value:
        _SECRETS.add(value)


def redact(text: str) -> str:
    for secret in _SECRETS:
        text = text.replace(secret, "***")
    return text


def log(logger: logging.Logger, level: int, event: str, **fields: Any) -> None:
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={logs.FIELDS: fields})


def configure(fmt: str, level: str) -> None:
    """Install one stderr handler on the root logger (``fmt``: auto, json or text)."""
    logs.configure(fmt, level, quiet=_QUIET, scrub=redact)


HANDLED: dict[str, int] = {}
"""Failures caught and survived, by place (``/status`` ``handled_errors``, and the metric
``dispatcher_handled_errors_total{where}``): no error is swallowed without a log line and
a count."""


def handled(
    logger: logging.Logger,
    where: str,
    exc: BaseException,
    event: str = "error.handled",
    level: int = logging.ERROR,
    **fields: Any,
) -> None:
    """Log a failure the process survives (one line) and count it under ``where``."""
    HANDLED[where] = HANDLED.get(where, 0) + 1
    log(logger, level, event, where=where, error=repr(exc)[:300], **fields)
