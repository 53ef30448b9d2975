"""Orbit schedules with the Python SDK: list, trigger now, pause.

Run against a server started with `orbit serve`, with a schedule made by `orbit schedules
create` (docs/orbit/schedules.md):

    export ORBIT_URL=http://127.0.0.1:7470 ORBIT_TOKEN=orb_...
    .venv/bin/python examples/orbit_schedules.py SCHEDULE_ID
"""

from __future__ import annotations

import os
import sys
import uuid

from agentcall.orbit.sdk.client import Client


def main(schedule_id: str) -> None:
    with Client(os.environ["ORBIT_URL"], os.environ["ORBIT_TOKEN"]) as orbit:
        for schedule in orbit.schedules.iter():
            last = schedule.last_firing
            outcome = "never fired" if last is None else f"last {last.outcome}"
            print(schedule.id, schedule.state, schedule.spec.describe(), outcome)
        # one extra firing now; the same key again would answer the same task
        fired = orbit.schedules.trigger(schedule_id, f"trigger-{uuid.uuid4().hex}")
        print("triggered task", fired.firing.task_id)
        schedule = orbit.schedules.get(schedule_id)
        paused = orbit.schedules.pause(schedule_id, schedule.revision, "paused by the example")
        print("schedule", paused.id, paused.state, "revision", paused.revision)
        for firing in orbit.schedules.firings(schedule_id, 5):
            print(" ", firing.nominal_at.isoformat(), firing.kind, firing.outcome, firing.task_id)


if __name__ == "__main__":
    main(sys.argv[1])
