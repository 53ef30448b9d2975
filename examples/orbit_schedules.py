"""The schedules SDK in a few calls (docs/orbit/schedules.md): list the namespace's
schedules, trigger one now, and pause it at its current revision.

    ORBIT_URL=http://127.0.0.1:7470 ORBIT_TOKEN=orb_... .venv/bin/python \
        examples/orbit_schedules.py SCHEDULE_ID
"""

from __future__ import annotations

import os
import sys
import uuid

from agentcall.orbit.sdk.client import Client


def main(schedule_id: str) -> None:
    with Client(os.environ["ORBIT_URL"], os.environ["ORBIT_TOKEN"]) as orbit:
        for schedule in orbit.schedules.iter():
            print(schedule.id, schedule.state, schedule.spec.describe(), schedule.next_fire_at)
        fired = orbit.schedules.trigger(schedule_id, key=f"trigger-{uuid.uuid4().hex}")
        print("triggered task", fired.firing.task_id)
        schedule = orbit.schedules.get(schedule_id)
        paused = orbit.schedules.pause(schedule_id, schedule.revision, note="paused by the example")
        print("paused revision", paused.revision)


if __name__ == "__main__":
    main(sys.argv[1])
