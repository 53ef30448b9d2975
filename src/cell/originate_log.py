"""The originate log: one JSON line per call the cell really dialled, fsynced before dialling.

It is append-only and survives restarts; at start-up the cell reads it back so that
no call_id is ever dialled twice, whatever the boot. Tests and operators read it
to prove that nothing was dialled twice (``cell.originate_log.read_entries``).
"""

from __future__ import annotations

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

    def append(self, entry: Mapping[str, Any]) -> None:
        line = json.dumps(dict(entry), sort_keys=True, ensure_ascii=False) + "\n"
        self._file.write(line.encode("utf-8"))
        self._sync()
        self.dialled.add(str(entry["call_id"]))

    def close(self) -> None:
        self._file.close()
