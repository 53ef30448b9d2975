"""Structured logs of every agentcall service: one JSON object per line, or a readable line
on a terminal. This is the only module the services share.

A JSON line holds ``ts`` (UTC, milliseconds), ``level``, ``logger``, ``msg`` and the record's
fields, then ``exc`` when an exception is attached. A record's fields are its ``extra``
attributes (``log.info("listening", extra={"url": url})``); a dict passed as
``extra={"fields": {...}}`` is spread into the same place. The readable form is
``HH:MM:SS.mmm LEVEL   logger: message key=value ...`` in local time.

Callers pass only the fields they mean to record: never secrets, tokens or full payloads.
A service that must also guarantee it (the Dispatcher) passes ``scrub``, applied to every
rendered line.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

MESSAGE_KEY = "msg"
FIELDS = "fields"

_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
    "taskName",
}
_UVICORN = ("uvicorn", "uvicorn.error", "uvicorn.access")

Scrub = Callable[[str], str]


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The record's own fields: its ``extra`` attributes, with ``fields={...}`` spread."""
    found: dict[str, Any] = {}
    for key, value in vars(record).items():
        if key in _RESERVED or key.startswith("_"):
            continue
        if key == FIELDS and isinstance(value, dict):
            found.update(value)
        else:
            found[key] = value
    return found


class _Formatter(logging.Formatter):
    def __init__(self, scrub: Scrub | None = None) -> None:
        super().__init__()
        self._scrub = scrub

    def _finish(self, line: str) -> str:
        return self._scrub(line) if self._scrub else line


class JsonFormatter(_Formatter):
    """One JSON object per record (production, pipes, log shippers)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            MESSAGE_KEY: record.getMessage(),
        }
        entry.update(fields(record))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return self._finish(json.dumps(entry, default=str, ensure_ascii=False))


class TextFormatter(_Formatter):
    """One readable line per record (a terminal)."""

    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        pairs = " ".join(f"{k}={v}" for k, v in fields(record).items())
        line = f"{at} {record.levelname:<7} {record.name}: {record.getMessage()} {pairs}".rstrip()
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return self._finish(line)


def formatter(fmt: str = "auto", scrub: Scrub | None = None) -> logging.Formatter:
    """``fmt``: ``json``, ``text`` or ``auto`` (text when stderr is a terminal, else JSON)."""
    readable = fmt == "text" or (fmt == "auto" and sys.stderr.isatty())
    return TextFormatter(scrub) if readable else JsonFormatter(scrub)


def configure(
    fmt: str = "auto",
    level: str = "INFO",
    *,
    logger: str = "",
    quiet: Iterable[str] = (),
    scrub: Scrub | None = None,
) -> None:
    """Send the records of ``logger`` (the root logger by default) to stderr, one line each.

    ``quiet`` names chatty libraries held at WARNING. uvicorn's own handlers, if any, are
    removed so its records pass through this one. A named ``logger`` stops propagating, so
    its records are written once.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(fmt, scrub))
    target = logging.getLogger(logger or None)
    target.handlers[:] = [handler]
    target.setLevel(level.upper())
    if logger:
        target.propagate = False
    for name in _UVICORN:
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    for name in quiet:
        logging.getLogger(name).setLevel(logging.WARNING)
