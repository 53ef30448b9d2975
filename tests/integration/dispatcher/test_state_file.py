"""The state file guard on real files: a running D's state database deleted, renamed or
replaced under it stops every write (after rescuing a copy), a missing file is refused at
start unless created by ``init-state``, a file of another dispatcher id is refused, and an
unwritable state directory is one clear line, never a traceback."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agentcall.dispatcher.store.db import Database, StateForeign, StateMissing, StoreError
from agentcall.dispatcher.store.guard import StateFileLost
from agentcall.dispatcher.store.state import init_state, restore_state

pytestmark = pytest.mark.integration

D1 = "2f1a4e0c-7d3b-4c1e-9a5f-0b6c8d2e4f10"
D2 = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
BIN = Path(sys.executable).parent


def note(conn: sqlite3.Connection, text: str) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT)")
    conn.execute("INSERT INTO notes VALUES (?)", (text,))


def notes(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT text FROM notes")]
    finally:
        conn.close()


def rescued(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".rescued-*"))


async def opened(path: Path) -> Database:
    await init_state(path, D1)
    return await Database.open(path, dispatcher_id=D1, create=False)


def delete(path: Path) -> None:
    path.unlink()


def rename_away(path: Path) -> None:
    path.rename(path.with_name("moved.sqlite"))


def replace(path: Path) -> None:
    other = path.with_name("other.sqlite")
    sqlite3.connect(other).close()
    os.replace(other, path)


@pytest.mark.parametrize("lose", [delete, rename_away, replace], ids=lambda f: f.__name__)
async def test_a_lost_file_stops_every_write_and_leaves_a_rescued_copy(
    tmp_path: Path, lose: object
) -> None:
    path = tmp_path / "d.sqlite"
    db = await opened(path)
    await db.write(note, "before")
    assert callable(lose)
    lose(path)
    with pytest.raises(StateFileLost) as caught:
        await db.write(note, "after")
    assert db.lost is not None and str(caught.value) == db.lost
    (copy,) = rescued(path)
    assert str(copy) in db.lost
    # The write that found the loss committed to the lost file, its caller got the error:
    # the copy holds every commit, whether or not anything was acknowledged on it.
    assert notes(copy) == ["before", "after"]
    with pytest.raises(StateFileLost):  # every write after it is refused before it runs
        await db.write_first(note, "later")
    assert notes(copy) == ["before", "after"]
    assert await db.read(lambda conn: conn.execute("SELECT 1").fetchone()[0]) == 1
    await db.close()


async def test_a_commit_that_landed_in_a_lost_file_raises_before_its_caller_acts(
    tmp_path: Path,
) -> None:
    """The file vanishes during the transaction: the commit goes to the lost file, and the
    caller (who would ACK a delivery next) gets an error, not a success."""
    path = tmp_path / "d.sqlite"
    db = await opened(path)

    def write_then_lose(conn: sqlite3.Connection) -> None:
        note(conn, "in flight")
        path.unlink()

    with pytest.raises(StateFileLost):
        await db.write(write_then_lose)
    assert notes(rescued(path)[0]) == ["in flight"]
    await db.close()


async def test_the_watch_notices_a_lost_file_without_any_write(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    db = await opened(path)
    watch = asyncio.create_task(db.watch(0.05))
    await asyncio.sleep(0.1)
    assert not watch.done()
    path.unlink()
    with pytest.raises(StateFileLost, match="cannot be found"):
        await asyncio.wait_for(watch, 5)
    await db.close()


async def test_a_missing_file_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "nonexistent" / "dir" / "d.sqlite"
    with pytest.raises(StateMissing, match="neither does its directory"):
        await Database.open(path, dispatcher_id=D1, create=False)
    assert not path.parent.exists()
    here = tmp_path / "d.sqlite"
    with pytest.raises(StateMissing, match="dispatcher init-state"):
        await Database.open(here, dispatcher_id=D1, create=False)
    assert not here.exists()


async def test_a_file_of_another_dispatcher_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    await init_state(path, D1)
    with pytest.raises(StateForeign, match=f"belongs to dispatcher {D1}"):
        await Database.open(path, dispatcher_id=D2, create=False)
    db = await Database.open(path, dispatcher_id=D1, create=False)
    await db.close()


async def test_a_file_from_before_the_identity_row_is_claimed_at_its_first_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.sqlite"
    old = await Database.open(path)  # as a D of an older version left it: no owner yet
    await old.close()
    claimed = await Database.open(path, dispatcher_id=D1, create=False)
    await claimed.close()
    with pytest.raises(StateForeign):
        await Database.open(path, dispatcher_id=D2, create=False)


async def test_init_state_refuses_an_existing_file_and_a_waiting_rescued_copy(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.sqlite"
    db = await opened(path)
    with pytest.raises(StoreError, match="exists already"):
        await init_state(path, D1)
    await db.write(note, "kept")
    path.unlink()
    with pytest.raises(StateFileLost):
        await db.write(note, "noticed")
    await db.close()
    (copy,) = rescued(path)
    with pytest.raises(StoreError, match="--restore"):
        await init_state(path, D1)
    with pytest.raises(StoreError, match=f"belongs to dispatcher {D1}"):
        await restore_state(path, copy, D2)
    await restore_state(path, copy, D1)
    assert notes(path) == ["kept", "noticed"] and rescued(path) == []
    again = await Database.open(path, dispatcher_id=D1, create=False)
    await again.close()


def dispatcher(argv: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DISPATCHER_ID": str(uuid.uuid4()),
        "DISPATCHER_SECRET_KEY": "secret-key",
        "DISPATCHER_SAAS_URL": "http://127.0.0.1:9",
        "DISPATCHER_AMQP_URL": "amqp://user:broker-password@127.0.0.1:9/",
        "DISPATCHER_STATE_DB": str(state),
        "DISPATCHER_CELL_URL": "http://127.0.0.1:9",
        "DISPATCHER_HTTP_PORT": "0",
    }
    argv = [str(BIN / "dispatcher"), *argv]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines written for a person (the JSON log lines beside them left out)."""
    return [line for line in done.stderr.splitlines() if not line.startswith("{")]


def test_run_refuses_a_typo_in_the_state_path_in_one_line(tmp_path: Path) -> None:
    state = tmp_path / "nonexistent" / "dir" / "d.db"
    done = dispatcher(["run"], state)
    assert done.returncode == 2
    assert said(done) == [
        f"dispatcher: state database {state} does not exist and neither does its directory"
        f" {state.parent}: check DISPATCHER_STATE_DB (a moved volume, a typo?); on the first"
        " start of this dispatcher run dispatcher init-state"
    ]
    assert not state.parent.exists()


def _unwritable_directory() -> Path:
    """A directory this process cannot write to, also as root (sysfs refuses new files)."""
    for candidate in (Path("/sys"), Path("/proc")):
        try:
            (candidate / "agentcall-probe").touch()
        except OSError:
            return candidate
    pytest.skip("no unwritable directory on this machine")


def test_an_unwritable_state_directory_is_one_clear_line(tmp_path: Path) -> None:
    state = _unwritable_directory() / "d.sqlite"
    done = dispatcher(["init-state"], state)
    assert done.returncode == 2
    (line,) = said(done)
    assert "Traceback" not in done.stderr
    assert line.startswith(f"dispatcher: cannot write the lock file {state}.lock")
    assert f"the directory {state.parent} must exist and be writable" in line
    refused = dispatcher(["run"], state)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert len(said(refused)) == 1


def test_init_state_then_run_finds_its_file(tmp_path: Path) -> None:
    state = tmp_path / "d.sqlite"
    created = dispatcher(["init-state"], state)
    assert created.returncode == 0, created.stderr
    assert f"state database {state} created for dispatcher" in created.stdout
    again = dispatcher(["init-state"], state)
    assert again.returncode == 2 and "exists already" in again.stderr


async def test_the_assembled_d_reports_a_lost_file_as_not_ready(tmp_path: Path) -> None:
    """``/status`` and ``/readyz`` of the whole assembly, from the moment the file is lost."""
    from agentcall.dispatcher.cell.fake import FakeCell
    from agentcall.dispatcher.readiness import STATE
    from agentcall.dispatcher.service import Dispatcher
    from agentcall.dispatcher.settings import load_settings

    path = tmp_path / "d.sqlite"
    env = {
        "DISPATCHER_ID": D1,
        "DISPATCHER_SECRET_KEY": "secret-key",
        "DISPATCHER_SAAS_URL": "http://127.0.0.1:9",
        "DISPATCHER_AMQP_URL": "amqp://user:broker-password@127.0.0.1:9/",
        "DISPATCHER_STATE_DB": str(path),
        "DISPATCHER_CELL_URL": "http://127.0.0.1:9",
    }
    db = await opened(path)
    d = Dispatcher(load_settings(env), db, FakeCell())
    before = await d.snapshot()
    assert before["state_file"] == {"intact": True, "problem": None}
    assert STATE not in [c["cause"] for c in before["readiness"]["causes"]]
    path.unlink()
    with pytest.raises(StateFileLost):
        await asyncio.wait_for(db.watch(0.05), 5)
    after = await d.snapshot()
    assert after["state_file"]["intact"] is False
    (cause,) = [c for c in after["readiness"]["causes"] if c["cause"] == STATE]
    assert "cannot be found" in cause["detail"] and ".rescued-" in cause["detail"]
    await db.close()
