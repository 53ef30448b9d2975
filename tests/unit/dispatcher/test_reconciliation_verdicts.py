"""Reconciliation decisions after a D restart and a cell restart (crash rule, D-CMD-1, D-CMD-4).

``judge`` is pure: one pending execution, what the cell says about it, the current boot.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.dispatcher.calls.verdicts import (
    LOST_NO_CALL,
    LOST_RESTARTED,
    Finish,
    Follow,
    Hold,
    judge,
)
from agentcall.dispatcher.cell.port import CellCall, CellOrphan
from agentcall.dispatcher.domain.recording import Media
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.finalize.result import Ending
from agentcall.dispatcher.store.executions import Pending

NOW = datetime(2026, 9, 18, 10, 0, tzinfo=UTC)
GRACE = 5.0
BOOT = "boot-new"
OLD = "boot-old"


def pending(state: S = S.UNKNOWN, boot: str | None = BOOT, dialled_s_ago: float = 60) -> Pending:
    return Pending("exec-1", "exec-1", state, boot, NOW - timedelta(seconds=dialled_s_ago))


def call(state: str, **kw: object) -> CellCall:
    base: dict[str, object] = {
        "call_id": "exec-1",
        "boot_id": BOOT,
        "state": state,
        "started_at": NOW - timedelta(seconds=30),
        "ended_at": NOW if state == "ended" else None,
        "outcome": "answered" if state == "ended" else None,
        "reason_code": None,
        "transcript": (),
        "opt_out": False,
        "recording_expected": False,
        "recording": None,
    }
    base.update(kw)
    return CellCall(**base)  # type: ignore[arg-type]


ORPHAN = CellOrphan("exec-1", OLD, True, 160044, "b" * 64, 10000, None)


@pytest.mark.parametrize(
    ("cell_state", "state"),
    [("dialing", S.DIALING), ("ringing", S.RINGING), ("answered", S.IN_CALL)],
)
@pytest.mark.parametrize("before", [S.UNKNOWN, S.DIALING, S.RINGING])
def test_live_call_continues_after_a_d_restart(cell_state: str, state: S, before: S) -> None:
    """Crash rule: the cell still runs it → follow it; never redial, never finalize."""
    verdict = judge(pending(before), call(cell_state), None, BOOT, NOW, GRACE)
    assert verdict == Follow(state, BOOT)


def test_call_that_ended_meanwhile_is_finished_with_its_facts() -> None:
    recording = {
        "format": "wav",
        "channels": 1,
        "sample_rate_hz": 8000,
        "duration_ms": 1000,
        "size_bytes": 16044,
        "checksum_sha256": "a" * 64,
        "partial": False,
    }
    media = Media.from_json(recording)  # the port carries the recording typed
    ended = call("ended", recording_expected=True, recording=media, opt_out=True)
    verdict = judge(pending(), ended, None, BOOT, NOW, GRACE)
    assert isinstance(verdict, Finish)
    ending = verdict.ending
    assert (ending.end.outcome, ending.end.opt_out, ending.recording_expected) == (
        "answered",
        True,
        True,
    )
    assert ending.recording == recording


@pytest.mark.parametrize("state", [S.UNKNOWN, S.DIALING, S.RINGING, S.IN_CALL])
def test_cell_restart_finalizes_lost_calls_once_with_a_reason(state: S) -> None:
    """New boot id and no such call: failed / cell_restarted, not_created without a file."""
    verdict = judge(pending(state, boot=OLD), None, None, BOOT, NOW, GRACE)
    assert isinstance(verdict, Finish)
    assert (verdict.ending.end.outcome, verdict.ending.end.reason_code) == (
        "failed",
        LOST_RESTARTED,
    )
    assert verdict.ending.recording_expected is False


def test_cell_restart_with_an_orphan_recording_uploads_it() -> None:
    verdict = judge(pending(S.IN_CALL, boot=OLD), None, ORPHAN, BOOT, NOW, GRACE)
    assert isinstance(verdict, Finish)
    ending: Ending = verdict.ending
    assert ending.recording_expected and ending.recording is not None
    assert ending.recording["source"] == "orphan"
    assert ending.recording["partial"] is True
    assert ending.recording["checksum_sha256"] == "b" * 64


def test_orphan_without_a_checksum_is_not_a_recording() -> None:
    broken = CellOrphan("exec-1", OLD, True, None, None, None, None)
    verdict = judge(pending(boot=OLD), None, broken, BOOT, NOW, GRACE)
    assert isinstance(verdict, Finish) and not verdict.ending.recording_expected


@pytest.mark.parametrize(
    ("dialled_s_ago", "expected"),
    [(0.5, Hold), (GRACE - 0.01, Hold), (GRACE, Finish), (600, Finish)],
)
def test_same_boot_unknown_call_waits_for_the_originate_grace(
    dialled_s_ago: float, expected: type
) -> None:
    """An originate may still be in flight: the execution stays unknown (occupancy kept)."""
    verdict = judge(pending(dialled_s_ago=dialled_s_ago), None, None, BOOT, NOW, GRACE)
    assert isinstance(verdict, expected)
    if isinstance(verdict, Finish):
        assert verdict.ending.end.reason_code == LOST_NO_CALL


def test_execution_without_dial_time_is_held() -> None:
    p = Pending("exec-1", "exec-1", S.UNKNOWN, BOOT, None)
    assert isinstance(judge(p, None, None, BOOT, NOW, GRACE), Hold)


def test_call_found_on_a_new_boot_is_followed_on_that_boot() -> None:
    """An originate sent while the cell restarted landed on the new boot: follow it there."""
    verdict = judge(pending(S.UNKNOWN, boot=OLD), call("ringing"), None, BOOT, NOW, GRACE)
    assert verdict == Follow(S.RINGING, BOOT)
