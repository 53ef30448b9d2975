"""`orbit worker`: defined with the worker SDK (`orbit.worker.cli`) so that
`python -m agentcall.orbit.sdk.worker` starts without the server's imports."""

from __future__ import annotations

from agentcall.orbit.sdk.worker.cli import worker

__all__ = ["worker"]
