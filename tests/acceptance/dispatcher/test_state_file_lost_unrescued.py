"""The state file lost with no rescued copy, with real processes (D-CMD-1, D-RES-1).

A campaign of 200 commands; mid-campaign the D's state database is deleted and the D is
SIGKILLed at once, before it can rescue anything (and whatever it could rescue is gone too:
the disk is lost). The operator starts over with an empty ``dispatcher init-state``, the D
restarts, and the SaaS resends every command it has no call result for. The new D admits
them again: it has no record of them.

What must hold: no command is dialled twice. The call id of a command is derived from
(dispatcher id, task id, command id), so the re-admitted command asks the cell for the call
id it asked for before; the cell's originate log refuses a second dial and the D adopts the
call the cell still holds. Results: every command ends with exactly one call.result (the
call.result event id is derived from the call id, so a re-sent result is the same event):

* a call the cell still holds (live, or ended and not yet acknowledged) reports its real
  outcome (the 4 s calls live at the kill: ``answered``);
* a call the old D had finalized and acknowledged to the cell (its result, unpublished, was
  lost with the file) ends ``failed`` with the explicit reason ``cell_already_dialled`` —
  its outcome is nowhere any more, and it is not dialled again.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agentcall.dispatcher.store.db import rescued_copies
from tests.acceptance.dispatcher import test_state_file_loss as loss
from tests.acceptance.dispatcher.broker import originate_log
from tests.acceptance.dispatcher.harness import Scenario
from tests.acceptance.dispatcher.test_state_file_loss import (
    CALLEES,
    call_results_by_command,
    state_files,
)
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]
SCRIPT = loss.SCRIPT  # what this test's own cell runs (the `own_cell` fixture reads it)
TASK = "task-loss-unrescued"
LONG = {c for c in CALLEES if c.endswith("1")}
ALREADY_DIALLED = "cell_already_dialled"  # the call.result reason on the wire


def test_a_lost_state_file_without_a_rescued_copy_dials_nothing_twice(scene: Scenario) -> None:
    s = scene
    s.sip(allowed_targets=CALLEES, max_concurrent_calls=1000)
    s.task(TASK, ring_timeout_ms=10000, max_concurrent_calls=1000)
    s.quota(max_concurrent_calls=1000)
    s.start()
    state = Path(s.env()["DISPATCHER_STATE_DB"])
    first = s.calls(TASK, callees=CALLEES[:150])
    s.wait_results(150, timeout=60, event_type="command.result")
    wait_for(lambda: len(call_results_by_command(s)) >= 50, 30, "the first call results")

    for path in state_files(state):  # the file goes, and the D dies before it notices
        path.unlink(missing_ok=True)
    s.kill()
    for path in rescued_copies(state):  # the disk is lost: no rescued copy either
        path.unlink(missing_ok=True)
    second = s.calls(TASK, callees=CALLEES[150:])  # queued while the D is down
    unanswered = [c for c in first + second if c not in call_results_by_command(s)]
    assert set(second) <= set(unanswered)
    assert set(unanswered) - set(second), "the loss happened mid-campaign (calls still live)"

    s.init_state(s.env())  # empty: nothing to restore
    s.start()
    results = loss.resend_until_answered(s, TASK, first + second, unanswered, 60)
    dials = Counter(e["tags"]["command_id"] for e in originate_log(s.cell.data))
    assert [c for c, n in dials.items() if n > 1] == [], "0 second dials (D-CMD-1)"
    assert set(dials) == set(first + second), "every command was dialled once"
    assert set(results) == set(first + second), "0 results lost"
    assert [c for c, events in results.items() if len(events) != 1] == [], "D-RES-1"

    payloads = {
        r["body"]["payload"]["source_command_id"]: r["body"]["payload"]
        for r in s.results(event_type="call.result")
    }
    resent = [payloads[c] for c in unanswered]
    reasons = Counter((p["outcome"], p["reason_code"]) for p in resent if p["outcome"] == "failed")
    assert set(reasons) <= {("failed", ALREADY_DIALLED)}, reasons
    long_resent = [p for p in resent if p["callee"] in LONG]
    assert long_resent, "calls were live when the D died"
    assert {p["outcome"] for p in long_resent} == {"answered"}, "the live calls were adopted"
    assert {p["outcome"] for p in resent if p["callee"] not in LONG} <= {"busy", "failed"}
