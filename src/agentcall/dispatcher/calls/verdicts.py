"""What the cell's answer means for one pending execution (pure): follow, finish or hold.

* **D restart** — a live call goes back to its live state and continues; a call that
  ended meanwhile is finalized once; nothing is ever redialled.
* **Cell restart** (a new boot id) — the old boot's calls are gone: finalized once as
  ``failed`` / ``cell_restarted``; a recording the dead cell left on disk (an orphan,
  possibly partial) is uploaded like any other.
* **Dialled before** (the cell refused the call id as ``already_dialled`` /
  ``call_id_conflict``, or answered the originate with a call that had already ended: the
  command was admitted again after the D's state was lost) — :func:`adopt`: the cell's
  call is this execution's (followed, or finalized with its real outcome); a call the cell
  no longer holds is finalized once as ``failed`` / ``cell_already_dialled``. Never a
  second dial.
* **Same boot, call unknown to the cell** — once the originate can no longer be in flight
  (``grace_s`` after the dial started) it is finalized as ``failed`` /
  ``cell_has_no_call``; before that it stays ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentcall.dispatcher.calls.events import ending_from_call
from agentcall.dispatcher.cell.port import CellCall, CellOrphan
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.finalize.result import Ending, failed_ending
from agentcall.dispatcher.recording.transaction import ORPHAN
from agentcall.dispatcher.store.executions import Pending

_CELL_STATES = {"dialing": S.DIALING, "ringing": S.RINGING, "answered": S.IN_CALL}
LOST_RESTARTED = "cell_restarted"
LOST_NO_CALL = "cell_has_no_call"
LOST_ALREADY_DIALLED = "cell_already_dialled"


@dataclass(frozen=True)
class Follow:
    """The cell runs the call: back to (or stay in) its live state, keep following."""

    state: S
    boot_id: str


@dataclass(frozen=True)
class Finish:
    """The call ended (in the cell, or lost with it): end and finalize once."""

    ending: Ending


@dataclass(frozen=True)
class Hold:
    """Not decidable yet: stays as it is (unknown keeps its occupancy)."""

    why: str


Verdict = Follow | Finish | Hold


def orphan_recording(orphan: CellOrphan) -> dict[str, Any]:
    """The Ending.recording of a call lost with its cell whose file is on disk."""
    return {
        "source": ORPHAN,
        "upload": orphan.upload_status,
        "format": "wav",
        "channels": 1,
        "sample_rate_hz": 8000,
        "duration_ms": orphan.duration_ms,
        "size_bytes": orphan.size_bytes,
        "checksum_sha256": orphan.sha256,
        "partial": orphan.partial,
    }


def _lost(p: Pending, reason: str, orphan: CellOrphan | None, now: datetime) -> Finish:
    ending = failed_ending(p.dial_started_at or now, now, reason)
    if orphan is not None and orphan.size_bytes is not None and orphan.sha256:
        ending = Ending(ending.end, recording_expected=True, recording=orphan_recording(orphan))
    return Finish(ending)


def judge(
    p: Pending,
    call: CellCall | None,
    orphan: CellOrphan | None,
    boot: str,
    now: datetime,
    grace_s: float,
) -> Verdict:
    """What the cell's answer means for one pending execution (pure)."""
    if call is not None:
        if call.state == "ended":
            return Finish(ending_from_call(call, now))
        return Follow(_CELL_STATES.get(call.state, S.DIALING), call.boot_id)
    if p.cell_boot_id is not None and p.cell_boot_id != boot:
        return _lost(p, LOST_RESTARTED, orphan, now)
    started = p.dial_started_at
    if started is None or now - started < timedelta(seconds=grace_s):
        return Hold("the originate may still be in flight")
    return _lost(p, LOST_NO_CALL, orphan, now)


def adopt(p: Pending, call: CellCall | None, now: datetime) -> Verdict:
    """The cell dialled ``p``'s call id before: take its call, never dial again (pure).

    ``call`` is what the cell holds under that id now (None: nothing any more — it was
    acknowledged, or lost with a cell restart, so its outcome is not known here)."""
    if call is None:
        return _lost(p, LOST_ALREADY_DIALLED, None, now)
    if call.state == "ended":
        return Finish(ending_from_call(call, now))
    return Follow(_CELL_STATES.get(call.state, S.DIALING), call.boot_id)
