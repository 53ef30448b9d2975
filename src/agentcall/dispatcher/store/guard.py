"""The state file guard: the D's state database must stay the file it opened.

The never-twice guarantee (D-CMD-1) rests on that one file: its inbox dedupes redelivered
commands and its executions say what was dialled. A running D holds the file open, so a
file deleted, renamed or replaced under it goes on taking writes that no later start will
see. The guard keeps a descriptor of the file it opened with its device and inode, and
compares them with what the path names now: one ``os.stat`` and one ``os.fstat`` per check
(a few microseconds against the millisecond of a synchronous commit), after every write
transaction commits (so that nothing is acknowledged or dialled on the strength of a commit
to a lost file) and once a second by a watch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agentcall.dispatcher.errors import DispatcherError


@dataclass(frozen=True)
class Seen:
    """What one stat of the path answered: its device and inode, or the error."""

    dev: int = 0
    ino: int = 0
    error: str | None = None


def file_problem(held_dev: int, held_ino: int, held_links: int, now: Seen) -> str | None:
    """Why the path no longer names the file the D holds (pure); ``None`` while it does."""
    if now.error is not None:
        return f"the state file cannot be found at its path any more ({now.error})"
    if (now.dev, now.ino) != (held_dev, held_ino):
        return "the state file was replaced: its path now names another file"
    if held_links == 0:
        return "the state file was deleted"
    return None


class StateFileLost(DispatcherError, OSError):
    """The state database was deleted, renamed or replaced while the D ran.

    It is an ``OSError`` too, so every loop treats it as the operating-system failure it is
    (the process stops; nothing is quarantined or acknowledged on its account). Fix: see
    "The state file" in docs/dispatcher.md — restore the rescued copy with
    ``dispatcher init-state --restore`` and start again.
    """


class Guard:
    """A descriptor of the opened state file, and the check that the path still names it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        held = os.fstat(self._fd)
        self.dev, self.ino = held.st_dev, held.st_ino

    def problem(self) -> str | None:
        try:
            now = os.stat(self.path)
        except OSError as exc:
            seen = Seen(error=exc.strerror or type(exc).__name__)
        else:
            seen = Seen(now.st_dev, now.st_ino)
        return file_problem(self.dev, self.ino, os.fstat(self._fd).st_nlink, seen)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
