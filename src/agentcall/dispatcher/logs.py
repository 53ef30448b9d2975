"""Structured logs: JSON lines, or readable ``key=value`` lines on a terminal.

``log(logger, level, event, **fields)`` writes one record; every rendered line passes
through a redactor that replaces the dispatcher secret (and any value registered with
:func:`register_secret`) by ``***``, so a secret can never reach a log by accident.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

_SECRETS: set[str] = set()
_FIELDS = "fields"


def register_secret(value: str) -> None:
    if value:
        _SECRETS.add(value)


def redact(text: str) -> str:
    for secret in _SECRETS:
        text = text.replace(secret, "***")
    return text


def log(logger: logging.Logger, level: int, event: str, **fields: Any) -> None:
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={_FIELDS: fields})


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        body.update(getattr(record, _FIELDS, {}))
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(body, default=str, ensure_ascii=False))


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        fields = " ".join(f"{k}={v}" for k, v in getattr(record, _FIELDS, {}).items())
        line = f"{at} {record.levelname:<7} {record.name}: {record.getMessage()} {fields}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return redact(line.rstrip())


def configure(fmt: str, level: str) -> None:
    """Install one stderr handler on the root logger (``fmt``: auto, json or text)."""
    use_text = fmt == "text" or (fmt == "auto" and sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TextFormatter() if use_text else _JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("aiormq", "aio_pika", "httpx", "httpcore", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
