"""The originate log: one JSON line per call the cell really dialled, fsynced before dialling.

It is append-only and survives restarts; at start-up the cell reads it back so that
no call_id is ever dialled twice, whatever the boot. Appends made at the same time
share one write and one fsync (group commit, off the event loop). Tests and operators read it
to prove that nothing was dialled twice (``agentcall.cell.state.originate_log.read_entries``).

The never-twice guarantee rests on this one file, so the cell guards it:

- at start, a missing log is refused when the data dir shows that a cell ran there before
  (:func:`may_create`), unless the operator says this is a first start;
- while running, the file at the path must stay the one the cell opened (same device and
  inode): :meth:`OriginateLog.check` runs before and after every write and once a second, and a log
  deleted, renamed or replaced raises :class:`StateLostError`: nothing more is dialled.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentcall.cell.domain.errors import StateLostError

FILE_NAME = "originate.log"
# what a cell leaves in its data dir once it has run there (the log is created beside them)
EARLIER_RUN = ("cell.lock", "cell.url", "sip-config.json")


def used_before(data_dir: Path) -> bool:
    """Whether a cell has run in ``data_dir`` (read before this cell takes its lock): a file
    a cell leaves there, or a recording."""
    if any((data_dir / name).exists() for name in EARLIER_RUN):
        return True
    recordings = data_dir / "recordings"
    return recordings.is_dir() and any(recordings.iterdir())


def may_create(*, log_exists: bool, used_before: bool, first_start: bool) -> bool:
    """Whether the cell may start (creating an empty log if there is none): a missing log
    in a data dir where a cell ran before means its record of dialled calls is lost."""
    return log_exists or first_start or not used_before


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


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class OriginateLog:
    def __init__(self, path: Path, *, create: bool) -> None:
        """Open the log at ``path``; a missing one is created only if ``create``."""
        if not create and not path.exists():
            raise StateLostError(f"the originate log {path} is missing", field="originate_log")
        self.path = path
        self.dialled: set[str] = {e["call_id"] for e in read_entries(path)}
        self._file = path.open("ab")
        self._identity = _identity(os.fstat(self._file.fileno()))
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

    def check(self) -> None:
        """Raise :class:`StateLostError` unless ``path`` is still the file opened."""
        try:
            current = _identity(os.stat(self.path))
        except OSError as exc:  # deleted, renamed, or its directory is gone
            raise StateLostError(
                f"the originate log {self.path} was deleted or renamed ({exc.strerror})",
                field="originate_log",
            ) from None
        if current != self._identity:
            raise StateLostError(
                f"the originate log {self.path} was replaced by another file",
                field="originate_log",
            )

    def _write(self, data: bytes) -> None:
        self.check()
        self._file.write(data)
        self._sync()
        self.check()  # replaced while writing: the entry may be in the lost file only

    async def append(self, entry: Mapping[str, Any]) -> None:
        """Return once ``entry`` is durably on disk (raises ``OSError`` if it is not, and
        :class:`StateLostError` if the file at the path is no longer the log opened)."""
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
            except (OSError, StateLostError) as exc:
                for _, done in batch:
                    done.set_exception(exc)
            else:
                for _, done in batch:
                    done.set_result(None)

    async def aclose(self) -> None:
        if self._flusher is not None:
            await self._flusher
        self._file.close()
