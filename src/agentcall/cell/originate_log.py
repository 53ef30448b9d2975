"""The originate log: one JSON line per call the cell really dialled, fsynced before dialling.

It is append-only and survives restarts; at start-up the cell reads it back so that
no call_id is ever dialled twice, whatever the boot. Appends made at the same time
share one write and one fsync (group commit, off the event loop). Tests and operators read it
to prove that nothing was dialled twice (``agentcall.cell.originate_log.read_entries``).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def read_entries(path: Path) -> list[dict[str, Any]]:
    """Every complete entry of the log (a torn last line from a crash is skipped)."""
    entries: list[dict[str, Any]] = []
    if not path.exists():
        return entries
    with path.open("r", encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("call_id"), str):
                entries.append(entry)
    return entries


class OriginateLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.dialled: set[str] = {e["call_id"] for e in read_entries(path)}
        self._file = path.open("ab")
        self._queue: list[tuple[bytes, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._repair_torn_tail()

    def _repair_torn_tail(self) -> None:
        size = self.path.stat().st_size
        if size == 0:
            return
        with self.path.open("rb") as f:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                self._file.write(b"\n")  # end the torn line so the next entry stays whole
                self._sync()

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def _write(self, data: bytes) -> None:
        self._file.write(data)
        self._sync()

    async def append(self, entry: Mapping[str, Any]) -> None:
        """Return once ``entry`` is durably on disk (raises ``OSError`` if it is not)."""
        line = json.dumps(dict(entry), sort_keys=True, ensure_ascii=False) + "\n"
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((line.encode("utf-8"), done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name="originate-log")
        await done
        self.dialled.add(str(entry["call_id"]))

    async def _flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                await asyncio.to_thread(self._write, b"".join(line for line, _ in batch))
            except OSError as exc:
                for _, done in batch:
                    done.set_exception(exc)
            else:
                for _, done in batch:
                    done.set_result(None)

    async def aclose(self) -> None:
        if self._flusher is not None:
            await self._flusher
        self._file.close()
