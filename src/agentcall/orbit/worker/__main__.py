"""`python -m orbit.worker --app module:registry`: the `orbit worker` command, lightly."""

from agentcall.orbit.worker.cli import worker

worker(prog_name="python -m orbit.worker")
