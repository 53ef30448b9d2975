"""The originate log's guard: when a missing log may be created, and what a deleted or
replaced log does to the next write (nothing is written, StateLostError)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcall.cell.domain.errors import StateLostError
from agentcall.cell.state.originate_log import OriginateLog, may_create, read_entries, used_before

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("log_exists", "used", "first_start", "allowed"),
    [
        (True, True, False, True),  # the usual restart
        (True, False, False, True),
        (False, False, False, True),  # a new data dir: the first start
        (False, True, False, False),  # a cell ran here and its record is gone
        (False, True, True, True),  # the operator says nothing was dialled here
    ],
)
def test_a_missing_log_is_created_only_on_a_first_start(
    log_exists: bool, used: bool, first_start: bool, allowed: bool
) -> None:
    verdict = may_create(log_exists=log_exists, used_before=used, first_start=first_start)
    assert verdict is allowed


@pytest.mark.parametrize("left", ["cell.lock", "cell.url", "sip-config.json", "recordings/c1.wav"])
def test_what_an_earlier_cell_leaves_marks_the_data_dir_used(tmp_path: Path, left: str) -> None:
    (tmp_path / "recordings").mkdir()  # made by every start, before the check
    assert not used_before(tmp_path)
    (tmp_path / left).write_text("")
    assert used_before(tmp_path)


def test_a_missing_log_is_refused_unless_created(tmp_path: Path) -> None:
    with pytest.raises(StateLostError, match="missing"):
        OriginateLog(tmp_path / "originate.log", create=False)
    assert not (tmp_path / "originate.log").exists()


@pytest.mark.parametrize("loss", ["deleted", "renamed", "replaced"])
async def test_a_lost_log_refuses_the_next_write(tmp_path: Path, loss: str) -> None:
    path = tmp_path / "originate.log"
    log = OriginateLog(path, create=True)
    await log.append({"call_id": "a"})
    log.check()
    if loss == "deleted":
        path.unlink()
    elif loss == "renamed":
        path.rename(tmp_path / "moved.log")
    else:
        (tmp_path / "other.log").write_bytes(path.read_bytes())
        os.replace(tmp_path / "other.log", path)
    with pytest.raises(StateLostError):
        log.check()
    with pytest.raises(StateLostError):
        await log.append({"call_id": "b"})
    await log.aclose()
    assert "b" not in log.dialled
    assert "b" not in {e["call_id"] for e in read_entries(path)}
