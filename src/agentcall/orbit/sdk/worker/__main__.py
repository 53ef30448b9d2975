"""`python -m agentcall.orbit.sdk.worker --app module:registry`: the `orbit worker` command,
lightly."""

from agentcall.orbit.sdk.worker.cli import worker

worker(prog_name="python -m agentcall.orbit.sdk.worker")
