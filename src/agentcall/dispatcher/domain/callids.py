"""The identity of an accepted command's execution, call and results (D-CMD-1, D-RES-1). Pure.

The ids are derived, not drawn: the execution id of a command is a UUID version 5 of
(dispatcher id, task id, command id) under :data:`NAMESPACE`, and its call id is the same
value. The same command therefore always asks the cell for the same call id — also after
the D's state file was lost and the SaaS resent the command to an empty D: the cell's
originate log refuses a second dial of that call id, and the D adopts the call instead of
placing a new one. The result event ids are derived the same way, so a result sent again
after a lost state is the same event (the SaaS deduplicates on event_id):

* ``command.result`` — from (dispatcher id, command id): one per command;
* ``call.result`` — from the call id: one per call.

The contract asks only for opaque ids (1..256 characters, no control characters); a UUID's
36 characters satisfy it. The parts are joined with a unit separator, which no opaque id
contains, so two different triples never hash the same text.
"""

from __future__ import annotations

import uuid

NAMESPACE = uuid.UUID("6f1d2a8e-3c5b-5e7a-9f40-2b8d1c7e4a93")  # never change: ids would move
_SEP = "\x1f"


def _derive(*parts: str) -> str:
    return str(uuid.uuid5(NAMESPACE, _SEP.join(parts)))


def execution_id(dispatcher_id: str, task_id: str, command_id: str) -> str:
    """The execution id of a command, which is also its call id."""
    return _derive("execution", dispatcher_id, task_id, command_id)


def command_result_event_id(dispatcher_id: str, command_id: str) -> str:
    """The event id of the one ``command.result`` of a command."""
    return _derive("command.result", dispatcher_id, command_id)


def call_result_event_id(call_id: str) -> str:
    """The event id of the one ``call.result`` of a call."""
    return _derive("call.result", call_id)
