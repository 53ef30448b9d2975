"""A call id the cell dialled before is adopted, never dialled again (D-CMD-1). Pure.

After the D's state was lost, a command admitted again asks the cell for the call id it
asked for before; the cell refuses a second dial, and :func:`adopt` says what the call it
still holds (or holds no more) means for the new execution.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.dispatcher.calls.verdicts import (
    LOST_ALREADY_DIALLED,
    Finish,
    Follow,
    Verdict,
    adopt,
)
from agentcall.dispatcher.cell.port import CellCall
from agentcall.dispatcher.domain.states import ExecutionState as S
from agentcall.dispatcher.store.executions import Pending

pytestmark = pytest.mark.unit

NOW = datetime(2026, 9, 21, 2, 0, tzinfo=UTC)
PENDING = Pending("exec-1", "exec-1", S.UNKNOWN, "boot-1", NOW - timedelta(seconds=1))


def call(state: str, outcome: str | None = None) -> CellCall:
    return CellCall(
        call_id="exec-1",
        boot_id="boot-1",
        state=state,
        started_at=NOW - timedelta(seconds=30),
        ended_at=NOW - timedelta(seconds=2) if state == "ended" else None,
        outcome=outcome,
        reason_code=None,
        transcript=(),
        opt_out=False,
        recording_expected=False,
        recording=None,
    )


CASES: list[tuple[str, CellCall | None, type[Verdict], object]] = [
    ("no call any more: failed, explicit reason", None, Finish, LOST_ALREADY_DIALLED),
    ("ended, not acknowledged: its real outcome", call("ended", "busy"), Finish, "busy"),
    ("ended answered", call("ended", "answered"), Finish, "answered"),
    ("still dialling: followed", call("dialing"), Follow, S.DIALING),
    ("ringing: followed", call("ringing"), Follow, S.RINGING),
    ("answered: followed in call", call("answered"), Follow, S.IN_CALL),
]


@pytest.mark.parametrize(("name", "held", "kind", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_cells_call_is_the_executions(
    name: str, held: CellCall | None, kind: type[Verdict], expected: object
) -> None:
    verdict = adopt(PENDING, held, NOW)
    assert isinstance(verdict, kind)
    if isinstance(verdict, Follow):
        assert (verdict.state, verdict.boot_id) == (expected, "boot-1")
    elif isinstance(verdict, Finish):
        end = verdict.ending.end
        assert expected in (end.outcome, end.reason_code)
        if held is None:
            assert (end.outcome, end.reason_code) == ("failed", LOST_ALREADY_DIALLED)
