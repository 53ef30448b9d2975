"""Orbit Task API v1 with the Python SDK: submit (and replay), read, list, cancel.

Run against a server started with `orbit serve`, after `orbit migrate` and `orbit init`:

    export ORBIT_URL=http://127.0.0.1:7470 ORBIT_TOKEN=orb_... ORBIT_QUEUE_ID=...
    .venv/bin/python examples/orbit_tasks.py
"""

from __future__ import annotations

import os
import uuid
from decimal import Decimal

from agentcall.orbit.sdk.client import (
    CancelTaskRequest,
    Client,
    ListTasksRequest,
    StateConflictError,
    SubmitTaskRequest,
)


def main() -> None:
    queue_id = os.environ["ORBIT_QUEUE_ID"]
    operation = uuid.uuid4().hex  # one key per business operation, kept for replays
    request = SubmitTaskRequest(
        queue_id=queue_id,
        handler="file.convert",
        handler_version="v1",
        payload_version="v1",
        # exact numbers: int and Decimal, never float
        payload={
            "source_ref": "objects/input.txt",
            "sequence": 9007199254740993,
            "ratio": Decimal("1.10"),
        },
        business_key="conversion-001",
    )
    with Client(os.environ["ORBIT_URL"], os.environ["ORBIT_TOKEN"]) as orbit:
        first = orbit.submit_task(f"{operation}-submit", request)
        print("submitted", first.task.id, first.task.state, "deduplicated:", first.deduplicated)

        # after a timeout or a 503, resend the SAME key and content: never a new key
        again = orbit.submit_task(f"{operation}-submit", request)
        assert again.deduplicated and again.task.id == first.task.id
        print("replayed ", again.task.id, "deduplicated:", again.deduplicated)

        task = orbit.get_task(first.task.id)
        assert task.payload["sequence"] == 9007199254740993
        assert str(task.payload["ratio"]) == "1.10"
        print("payload  ", task.payload)

        waiting = list(orbit.iter_tasks(ListTasksRequest(queue_id, state="WAITING", limit=50)))
        print("waiting  ", len(waiting), "task(s) in the queue")

        cancel = CancelTaskRequest(expected_revision=task.revision, reason="example finished")
        done = orbit.cancel_task(task.id, f"{operation}-cancel", cancel)
        print("cancelled", done.task.id, done.task.state, "revision", done.task.revision)
        try:
            orbit.cancel_task(task.id, f"{operation}-cancel-2", cancel)
        except StateConflictError as exc:
            print("a second cancel with a new key is refused:", exc.code)


if __name__ == "__main__":
    main()
