"""Creating the state file, or putting a saved one back: ``dispatcher init-state``.

A D never creates its state file on its own (``dispatcher run`` refuses a missing one), so
that a lost file, a typo in DISPATCHER_STATE_DB or a volume that moved is a refusal, not a
silent start with an empty inbox and dedupe table. The file is created once, on the first
start of a dispatcher id; a lost file is put back from the copy the D rescued when it lost
it (or from a backup), which must belong to the same dispatcher id.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from agentcall.dispatcher.store import identity
from agentcall.dispatcher.store.db import Database, StoreError, rescued_copies, take_lock


async def init_state(path: Path, dispatcher_id: str) -> None:
    """Create an empty state file owned by ``dispatcher_id`` (refused if one exists, or if
    a rescued copy waits to be restored)."""
    if path.exists():
        raise StoreError(f"state database {path} exists already: dispatcher run starts on it")
    waiting = rescued_copies(path)
    if waiting:
        raise StoreError(
            f"a copy of the lost state database is at {waiting[-1]}: restore it with"
            f" dispatcher init-state --restore {waiting[-1]}, or move it away to start empty"
            " (an empty state dials again every command still unanswered, see"
            " docs/dispatcher.md)"
        )
    db = await Database.open(path, dispatcher_id=dispatcher_id, create=True)
    await db.close()


def _owner(copy: Path) -> str | None:
    try:
        conn = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
        try:
            check = conn.execute("PRAGMA integrity_check").fetchone()
            if check is None or check[0] != "ok":
                raise StoreError(f"{copy} is damaged: integrity_check says {check}")
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if "state_identity" not in tables:
                return None
            owner = identity.read(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"{copy} is not a readable state database: {exc}") from exc
    return owner[0] if owner else None


async def restore_state(path: Path, copy: Path, dispatcher_id: str) -> None:
    """Move ``copy`` (a rescued copy or a backup of this dispatcher's state) to ``path``."""
    if path.exists():
        raise StoreError(f"state database {path} exists already: nothing to restore")
    if not copy.is_file():
        raise StoreError(f"{copy} is not a file")
    owner = _owner(copy)
    if owner is not None and owner != dispatcher_id:
        raise StoreError(
            f"{copy} belongs to dispatcher {owner}, not to DISPATCHER_ID={dispatcher_id}"
        )
    lock = take_lock(path, create=False)
    try:
        shutil.move(copy, path)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreError(f"cannot move {copy} to {path}: {exc}") from exc
    finally:
        lock.close()
    db = await Database.open(path, dispatcher_id=dispatcher_id, create=False)
    await db.close()
