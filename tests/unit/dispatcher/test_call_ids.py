"""The ids of an accepted command are derived from it, never drawn (D-CMD-1, D-RES-1).

The same command always gets the same execution id, call id and result event ids — also on
an empty D after its state file was lost — so the cell refuses a second dial of it and the
SaaS deduplicates a result sent again; any other command gets other ids.
"""

from __future__ import annotations

import re
import uuid

import pytest

from agentcall.dispatcher.domain import callids

pytestmark = pytest.mark.unit

OPAQUE = re.compile(r"^[^\x00-\x1f\x7f]{1,256}$")  # common.schema.json $defs.opaque_id
BASE = ("d-1", "task-a", "command-1")


def test_the_same_command_always_gets_the_same_ids() -> None:
    first = callids.execution_id(*BASE)
    assert callids.execution_id(*BASE) == first
    assert callids.call_result_event_id(first) == callids.call_result_event_id(first)
    assert callids.command_result_event_id("d-1", "command-1") == (
        callids.command_result_event_id("d-1", "command-1")
    )


def test_the_ids_are_fixed_across_releases() -> None:
    """A D upgraded between the loss and the resend must ask for the same call id."""
    assert callids.NAMESPACE == uuid.UUID("6f1d2a8e-3c5b-5e7a-9f40-2b8d1c7e4a93")
    expected = str(uuid.uuid5(callids.NAMESPACE, "execution\x1fd-1\x1ftask-a\x1fcommand-1"))
    assert callids.execution_id(*BASE) == expected


OTHERS = [
    ("another dispatcher", ("d-2", "task-a", "command-1")),
    ("another task", ("d-1", "task-b", "command-1")),
    ("another command", ("d-1", "task-a", "command-2")),
    ("the parts shifted", ("d-1", "task-ac", "ommand-1")),
    ("the parts swapped", ("task-a", "d-1", "command-1")),
]


@pytest.mark.parametrize(("name", "parts"), OTHERS, ids=[o[0] for o in OTHERS])
def test_any_other_command_gets_another_call_id(name: str, parts: tuple[str, str, str]) -> None:
    assert callids.execution_id(*parts) != callids.execution_id(*BASE)


def test_the_ids_are_valid_opaque_ids_and_never_collide_between_kinds() -> None:
    execution = callids.execution_id(*BASE)
    ids = {
        execution,
        callids.call_result_event_id(execution),
        callids.command_result_event_id("d-1", "command-1"),
    }
    assert len(ids) == 3
    assert all(OPAQUE.match(i) and uuid.UUID(i).version == 5 for i in ids)
