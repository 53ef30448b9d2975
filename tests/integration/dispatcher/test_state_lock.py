"""One D process per state database (D-NOTE-8), on real files and real processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentcall.dispatcher.store.db import Database, StateLocked, lock_path

pytestmark = pytest.mark.integration

HOLD = """
import asyncio, sys
from pathlib import Path
from agentcall.dispatcher.store.db import Database
async def main():
    db = await Database.open(Path(sys.argv[1]))
    print("open", flush=True)
    await asyncio.sleep(60)
asyncio.run(main())
"""


async def test_a_second_open_of_one_state_file_is_refused_d_note_8(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    first = await Database.open(path)
    with pytest.raises(StateLocked, match="another dispatcher process uses the state database"):
        await Database.open(path)
    await Database.open(tmp_path / "other.sqlite")  # another file is another D
    await first.close()
    again = await Database.open(path)  # closed: free again
    await again.close()
    assert lock_path(path).exists()


async def test_the_lock_dies_with_its_process_even_on_sigkill_d_note_8(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"open"
        with pytest.raises(StateLocked):
            await Database.open(path)
    finally:
        holder.kill()
        holder.wait()
    db = await Database.open(path)
    await db.close()
