"""The originate log (the record that a call was dialled) is guarded: a call is never
dialled twice because that record was lost.

- deleted or replaced while the cell runs: nothing more is dialled, the cell says so in one
  log line and exits non-zero;
- missing at start in a data dir where a cell ran before (SIGKILL, then the file is gone):
  the cell refuses to start, in one log line, non-zero; restored, it starts and still knows
  what it dialled; ``--first-start`` says explicitly that nothing was dialled there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agentcall.cell.client import AlreadyDialledError, CellClient, CellUnavailableError

from .harness import CellProcess
from .helpers import plan, unique

pytestmark = pytest.mark.integration

STATE_LOST_EXIT = 3


def _critical_lines(process: CellProcess) -> list[str]:
    lines = [json.loads(x) for x in process.log.read_text().splitlines() if x.startswith("{")]
    return [line["msg"] for line in lines if line.get("level") == "critical"]


def _exits(process: CellProcess) -> int:
    assert process.proc is not None
    return process.proc.wait(15)


@pytest.mark.parametrize("loss", ["deleted", "replaced"])
async def test_a_lost_originate_log_stops_the_cell_before_any_further_dial(
    tmp_path: Path, loss: str
) -> None:
    cell = CellProcess(tmp_path / "data")
    cell.start()
    path = cell.data_dir / "originate.log"
    async with CellClient(cell.url) as client:
        await client.originate(plan(unique("answer")))
        if loss == "deleted":
            path.unlink()
        else:  # an old copy put in its place (a restored backup, a moved volume)
            shutil.copy(path, tmp_path / "copy.log")
            os.replace(tmp_path / "copy.log", path)
        second = plan(unique("answer"))
        with pytest.raises(CellUnavailableError):
            await client.originate(second)
    assert _exits(cell) == STATE_LOST_EXIT
    [line] = _critical_lines(cell)
    assert "originate log" in line and "dials nothing more" in line
    if loss == "replaced":
        assert second.call_id not in {e["call_id"] for e in cell.originate_log()}


async def test_a_log_missing_after_sigkill_refuses_the_start_until_restored(
    tmp_path: Path,
) -> None:
    cell = CellProcess(tmp_path / "data")
    cell.start()
    first = plan(unique("long"))
    async with CellClient(cell.url) as client:
        await client.originate(first)
    cell.kill()
    path = cell.data_dir / "originate.log"
    shutil.move(path, tmp_path / "kept.log")
    refused = subprocess.run(cell.command(), capture_output=True, timeout=30, check=False)
    assert refused.returncode == STATE_LOST_EXIT
    said = [json.loads(x) for x in refused.stderr.decode().splitlines() if x.startswith("{")]
    [line] = [x["msg"] for x in said if x.get("level") == "critical"]
    assert "originate log" in line and "--first-start" in line
    assert not path.exists()  # nothing was created in its place
    shutil.move(tmp_path / "kept.log", path)
    cell.start()
    try:
        async with CellClient(cell.url) as client:
            with pytest.raises(AlreadyDialledError):
                await client.originate(first)  # never dialled a second time
    finally:
        assert cell.stop() == 0
    assert [e["call_id"] for e in cell.originate_log()] == [first.call_id]


async def test_first_start_creates_the_log_in_a_used_data_dir(tmp_path: Path) -> None:
    cell = CellProcess(tmp_path / "data")
    cell.start()
    assert cell.stop() == 0
    (cell.data_dir / "originate.log").unlink()
    told = CellProcess(tmp_path / "data", args=["--first-start"])
    told.start()
    try:
        async with CellClient(told.url) as client:
            await client.originate(plan(unique("answer")))
    finally:
        assert told.stop() == 0
    assert len(told.originate_log()) == 1
