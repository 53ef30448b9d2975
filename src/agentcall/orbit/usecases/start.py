"""A worker's `started` (worker-protocol.md §3.3): the attempt and its task LEASED → RUNNING,
batched with the other starts of the moment (one locking read, one UPDATE each, one INSERT of
events per batch: `agentcall.orbit.execution.kernel.START`)."""

from __future__ import annotations

from agentcall.orbit.execution.acks import Ack, Peer
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.kernel import START
from agentcall.orbit.protocol.messages import AttemptRef


async def start(hub: Hub, peer: Peer, ref: AttemptRef) -> Ack:
    """The ack of the start (a refusal is an error ack; the start fence may end the attempt)."""
    return await hub.batcher.submit(START, (peer, ref))
